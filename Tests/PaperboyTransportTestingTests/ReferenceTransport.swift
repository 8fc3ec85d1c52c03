import Foundation
import Paperboy
import PaperboyTransportTesting
import Synchronization

/// Resources in memory, with every misbehaviour the conformance suite asks fixtures for.
final class MemoryStore: Sendable {
    enum Guard: Sendable {
        case open
        case refusesEveryone
        case requires(user: String, password: String)
    }

    struct Resource: Sendable {
        var data: Data
        var version = 1
        var guarding = Guard.open
        var dropAfter: Int?
        var ignoresRanges = false
    }

    let resources = Mutex<[String: Resource]>([:])

    func resource(_ url: URL) -> Resource? { resources.withLock { $0[url.lastPathComponent] } }
}

/// The fixture for ``ReferenceTransport``: supports every optional capability.
struct MemoryFixture: TransportFixture {
    let store: MemoryStore

    private func put(_ resource: MemoryStore.Resource, _ name: String) -> URL {
        store.resources.withLock { $0[name] = resource }
        return URL(string: "ref://memory/\(name)")!
    }

    func publish(_ data: Data, as name: String) async throws -> URL { put(.init(data: data), name) }

    func replace(_ url: URL, with data: Data) async throws {
        store.resources.withLock {
            $0[url.lastPathComponent]?.data = data
            $0[url.lastPathComponent]?.version += 1
        }
    }

    func missingURL() async throws -> URL { URL(string: "ref://memory/missing")! }

    func publishRefusingCredentials(_ data: Data, as name: String) async throws -> URL? {
        put(.init(data: data, guarding: .refusesEveryone), name)
    }

    func publishProtected(_ data: Data, as name: String) async throws -> (url: URL, credential: Credential)? {
        (put(.init(data: data, guarding: .requires(user: "reader", password: "s3cret")), name),
         Credential(user: "reader", password: "s3cret"))
    }

    func publishDropping(_ data: Data, as name: String, after bytes: Int) async throws -> URL? {
        put(.init(data: data, dropAfter: bytes), name)
    }

    func publishIgnoringRanges(_ data: Data, as name: String) async throws -> URL? {
        put(.init(data: data, ignoresRanges: true), name)
    }
}

/// A transport that keeps the whole contract, unless told to break one rule (to prove that the
/// conformance suite notices).
struct ReferenceTransport: Transport {
    enum Flaw: String, Sendable, CaseIterable {
        case liesAboutOffset, buffersEverything, ignoresCancellation, echoesRecordedValidator
        case untypedNotFound, dropsAreFatal, asksForeverWhenRefused, skipsChallenges, overlapsWrites
        /// Writes a range's answer into a segment without checking where the answer starts.
        case splicesWholeAnswers
        /// Says in `begin` that a job's range ends where asked, then sends to the resource's end.
        case overrunsRanges
    }

    let store: MemoryStore
    var flaw: Flaw?

    var schemes: Set<String> { ["ref"] }
    var capabilities: TransportCapabilities { [.resume, .validators, .challenges, .ranges, .segments] }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        guard let resource = store.resource(job.url) else {
            if flaw == .untypedNotFound { throw CocoaError(.fileNoSuchFile) }
            throw TransportError(.notFound, "no such resource", url: job.url, isRetryable: false)
        }
        try await authenticate(resource.guarding, job: job, sink: sink)
        let data = resource.data
        var offset = job.offset
        var validator = ResourceValidator("v\(resource.version)", strength: .strong)
        let validatorMatches = job.validator == validator || flaw == .echoesRecordedValidator
        let changed = job.validator != nil && !validatorMatches
        if offset > Int64(data.count) || (offset > 0 && changed) || resource.ignoresRanges { offset = 0 }
        if flaw == .echoesRecordedValidator, offset > 0, let recorded = job.validator { validator = recorded }
        var position = Int(offset)
        if flaw == .liesAboutOffset { position = 0 }
        // A job's one range, unless the source ignores ranges (then everything from 0, said so).
        var end = data.count
        if let rangeEnd = job.rangeEnd, !resource.ignoresRanges, !changed, offset == job.offset {
            end = Int(min(rangeEnd, Int64(data.count)))
        }
        try sink.begin(TransferResponse(offset: offset, end: end < data.count ? Int64(end) : nil, expectedLength: Int64(data.count),
                                        validator: validator))
        if flaw == .overrunsRanges { end = data.count }

        if flaw == .buffersEverything {
            try await sink.write(data[position..<end])
            return
        }
        // With several connections, the second half is "fetched" as a range into a segment,
        // once its answer is known to start where asked (a source ignoring ranges answers from 0).
        var tail: (segment: any TransferSegment, bytes: Data)?
        if job.connectionsPerAsset > 1, job.rangeEnd == nil, data.count - position >= 2 {
            let middle = position + (data.count - position) / 2
            let answer = resource.ignoresRanges ? (start: 0, bytes: data) : (start: middle, bytes: data[middle...])
            if answer.start == middle || flaw == .splicesWholeAnswers, let segment = try sink.segment(Int64(middle)..<Int64(data.count)) {
                tail = (segment, Data(answer.bytes.prefix(data.count - middle)))
                end = middle
            }
        }
        var sent = 0
        while position < end {
            if flaw != .ignoresCancellation { try Task.checkCancellation() }
            var chunkEnd = min(position + 64 * 1024, end)
            if let limit = resource.dropAfter {
                if sent >= limit {
                    throw TransportError(.connectionLost, "connection reset", url: job.url, isRetryable: flaw != .dropsAreFatal)
                }
                chunkEnd = min(chunkEnd, position + limit - sent)
            }
            if flaw == .overlapsWrites, chunkEnd - position > 1 {
                let first = data[position..<(position + (chunkEnd - position) / 2)]
                let second = data[(position + (chunkEnd - position) / 2)..<chunkEnd]
                async let one: Void = sink.write(first)
                async let two: Void = sink.write(second)
                _ = try await (one, two)
            } else {
                try await sink.write(data[position..<chunkEnd])
            }
            sent += chunkEnd - position
            position = chunkEnd
        }
        if let tail {
            var start = tail.bytes.startIndex
            while start < tail.bytes.endIndex {
                try Task.checkCancellation()
                let stop = min(start + 64 * 1024, tail.bytes.endIndex)
                try await Self.write(tail.bytes[start..<stop], to: tail.segment)
                start = stop
            }
        }
    }

    private static func write(_ bytes: Data, to segment: any TransferSegment) async throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
        defer { buffer.deallocate() }
        _ = bytes.copyBytes(to: buffer.bindMemory(to: UInt8.self))
        try await segment.write(UnsafeRawBufferPointer(buffer))
    }

    private func authenticate(_ guarding: MemoryStore.Guard, job: TransferJob, sink: any TransferSink) async throws {
        let accepted: (Credential) -> Bool
        switch guarding {
        case .open: return
        case .refusesEveryone: accepted = { _ in false }
        case .requires(let user, let password): accepted = { $0.user == user && $0.password == password }
        }
        if flaw == .skipsChallenges { return }
        var failures = 0
        while true {
            let challenge = AuthChallenge(kind: .httpBasic, url: job.url, realm: "memory", previousFailureCount: failures)
            switch await sink.challenge(challenge) {
            case .useCredential(let credential) where accepted(credential):
                return
            case .useCredential:
                failures += 1
                if failures >= 3, flaw != .asksForeverWhenRefused || failures >= 50 {
                    throw TransportError(.authenticationFailed, "credentials refused", url: job.url, isRetryable: false)
                }
            default:
                throw TransportError(.authenticationFailed, "no credentials", url: job.url, isRetryable: false)
            }
        }
    }
}
