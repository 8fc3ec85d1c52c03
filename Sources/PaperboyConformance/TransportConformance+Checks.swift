import Foundation
import Paperboy
import PaperboyTesting

extension TransportConformance {
    func checkFullDownload(_ recorder: CheckRecorder) async throws {
        for (size, seed) in [(options.resourceSize, UInt64(1)), (0, 2)] {
            let data = sampleData(size, seed: seed)
            let url = try await fixture.publish(data, as: uniqueName("full"))
            let sink = ConformanceSink()
            let result = await transfer(job(url), into: sink)
            let what = size == 0 ? "an empty resource" : "a \(size)-byte resource"
            guard recorder.expect(result.isFinished, "downloading \(what) failed: \(result)") else { continue }
            expectContract(sink, finished: true, recorder)
            recorder.expect(sink.response?.offset == 0, "begin reported offset \(sink.response?.offset ?? -1) for a transfer from 0")
            if let length = sink.response?.expectedLength {
                recorder.expect(length == Int64(size), "begin announced \(length) bytes for \(what)")
            }
            recorder.expect(sink.data == data, "received \(sink.data.count) bytes that differ from the \(size) published")
        }
    }

    func checkResume(_ recorder: CheckRecorder) async throws {
        guard transport.capabilities.contains(.resume) else {
            throw Skip(reason: "the transport does not declare the .resume capability")
        }
        let data = sampleData(options.resourceSize, seed: 3)
        let url = try await fixture.publish(data, as: uniqueName("resume"))
        let validator = try await probeValidator(url, recorder)
        let offset = data.count / 3
        let sink = ConformanceSink(.init(requestedOffset: Int64(offset), recordedValidator: validator))
        let result = await transfer(job(url, offset: Int64(offset), validator: validator), into: sink)
        if recorder.expect(result.isFinished, "resuming from byte \(offset) failed: \(result)") {
            expectContract(sink, finished: true, recorder)
            recorder.expect(
                sink.response?.offset == Int64(offset),
                "asked to continue an unchanged resource at byte \(offset), begin reported offset \(sink.response?.offset ?? -1)")
            if let length = sink.response?.expectedLength {
                recorder.expect(length == Int64(data.count),
                                "begin announced \(length) bytes: expectedLength is the whole resource's length (\(data.count)), not what remains")
            }
            let honoured = Int(sink.response?.offset ?? 0)
            recorder.expect(sink.data == data[honoured...], "the bytes after offset \(honoured) differ from the published ones")
        }

        let run = await deliverThroughLibrary(url, data: data, cutAfter: offset)
        guard recorder.expect(run.failure == nil, "through a Library, a transfer cut at byte \(offset) did not recover: \(run.failure ?? "")") else { return }
        recorder.expect(run.delivered == data, "through a Library, the resumed file is not byte-identical to the source")
        recorder.expect(run.offsets == [0, Int64(offset)], "through a Library, the attempts asked for offsets \(run.offsets), expected [0, \(offset)]")
        if validator != nil {
            recorder.expect(run.lastResponse?.offset == Int64(offset),
                            "through a Library, the second attempt began at \(run.lastResponse?.offset ?? -1), expected \(offset)")
        }
    }

    func checkChangedValidator(_ recorder: CheckRecorder) async throws {
        guard transport.capabilities.contains(.validators) else {
            throw Skip(reason: "the transport does not declare the .validators capability, so the core cannot tell versions apart")
        }
        let first = sampleData(options.resourceSize, seed: 4)
        let url = try await fixture.publish(first, as: uniqueName("changing"))
        guard let old = try await probeValidator(url, recorder) else {
            recorder.fail("the transport declares .validators but begin reported no validator")
            return
        }
        let second = sampleData(options.resourceSize + 4099, seed: 5)
        try await fixture.replace(url, with: second)
        let offset = first.count / 2
        let sink = ConformanceSink(.init(requestedOffset: Int64(offset), recordedValidator: old))
        let result = await transfer(job(url, offset: Int64(offset), validator: old), into: sink)
        if sink.threwRestart {
            // The transport resumed and let the core decide: it must pass the restart on.
            guard case .failed(let error) = result, error is TransferRestart else {
                recorder.fail("begin threw TransferRestart but the transfer ended with \(result); rethrow it unchanged")
                return
            }
            let again = ConformanceSink()
            let retry = await transfer(job(url), into: again)
            recorder.expect(retry.isFinished, "downloading the new version from 0 failed: \(retry)")
            recorder.expect(again.response?.validator != old, "the new version reports the old validator \(old)")
            recorder.expect(again.data == second, "the new version's bytes differ from the published ones")
            return
        }
        guard recorder.expect(result.isFinished, "resuming after the resource changed failed: \(result)") else { return }
        expectContract(sink, finished: true, recorder)
        recorder.expect(sink.response?.offset == 0,
                        "the resource changed but begin reported offset \(sink.response?.offset ?? -1): two versions would be spliced")
        recorder.expect(sink.response?.validator != old, "the resource changed but begin reported the old validator \(old)")
        recorder.expect(sink.data == second, "after restarting, the bytes differ from the new version")
    }

    func checkIgnoredRange(_ recorder: CheckRecorder) async throws {
        let data = sampleData(options.resourceSize, seed: 6)
        guard let url = try await fixture.publishIgnoringRanges(data, as: uniqueName("no-ranges")) else {
            throw Skip(reason: "the fixture has no URL that ignores resume requests (publishIgnoringRanges)")
        }
        let validator = try await probeValidator(url, recorder)
        let offset = data.count / 2
        let sink = ConformanceSink(.init(requestedOffset: Int64(offset), recordedValidator: validator))
        let result = await transfer(job(url, offset: Int64(offset), validator: validator), into: sink)
        if recorder.expect(result.isFinished, "a transfer the source answered from 0 failed: \(result)") {
            expectContract(sink, finished: true, recorder)
            recorder.expect(sink.response?.offset == 0,
                            "the source sent the whole resource but begin reported offset \(sink.response?.offset ?? -1)")
            recorder.expect(sink.data == data, "the bytes sent from 0 differ from the published ones")
        }
        let run = await deliverThroughLibrary(url, data: data, cutAfter: offset)
        guard recorder.expect(run.failure == nil, "through a Library, a partial file of \(offset) bytes did not recover: \(run.failure ?? "")") else { return }
        recorder.expect(run.delivered == data, "through a Library, the file is not byte-identical after the source ignored the range")
        recorder.expect(run.lastResponse?.offset == 0,
                        "through a Library, the last attempt began at \(run.lastResponse?.offset ?? -1), expected 0")
    }

    func checkRanges(_ recorder: CheckRecorder) async throws {
        guard transport.capabilities.contains(.ranges) else {
            throw Skip(reason: "the transport does not declare the .ranges capability")
        }
        let data = sampleData(options.resourceSize, seed: 14)
        let url = try await fixture.publish(data, as: uniqueName("range"))
        let validator = try await probeValidator(url, recorder)
        let size = Int64(data.count)
        // Odd bounds (chunk-boundary bugs), from 0, to the end, and one byte.
        let ranges: [Range<Int64>] = [size / 7..<size / 7 * 4 + 1, 0..<65_537, size / 2..<size, size - 1..<size]
        for range in ranges {
            for recorded in [nil, validator] {
                let sink = ConformanceSink(.init(requestedOffset: range.lowerBound, recordedValidator: recorded))
                var ranged = job(url, offset: range.lowerBound, validator: recorded)
                ranged.rangeEnd = range.upperBound
                let result = await transfer(ranged, into: sink)
                let what = "the range \(range.lowerBound)..<\(range.upperBound)\(recorded == nil ? "" : " with the validator")"
                guard recorder.expect(result.isFinished, "fetching \(what) failed: \(result)") else { continue }
                expectContract(sink, finished: true, recorder)
                expectHonestRange(sink, of: data, what, recorder)
                recorder.expect(sink.response?.offset == range.lowerBound && (sink.response?.end ?? size) == range.upperBound,
                                "asked for \(what) of an unchanged resource, begin reported offset \(sink.response?.offset ?? -1) end \(sink.response?.end.map(String.init) ?? "nil")")
                if let length = sink.response?.expectedLength {
                    recorder.expect(length == size, "begin announced \(length) bytes for \(what): expectedLength is the whole resource's length (\(size))")
                }
            }
        }
        // A range of a version that changed since its validator was recorded: never the new
        // version's bytes under the old validator (the library would splice two versions).
        if let validator, transport.capabilities.contains(.validators) {
            let second = sampleData(options.resourceSize + 4099, seed: 15)
            try await fixture.replace(url, with: second)
            let sink = ConformanceSink()
            var ranged = job(url, offset: 0, validator: validator)
            ranged.rangeEnd = 65_537
            let result = await transfer(ranged, into: sink)
            if recorder.expect(result.isFinished, "fetching a range of a changed resource with its old validator failed: \(result)") {
                expectContract(sink, finished: true, recorder)
                expectHonestRange(sink, of: second, "a range of a changed resource", recorder)
                recorder.expect(sink.response?.validator != validator,
                                "a range of a changed resource was reported with the old validator \(validator)")
            }
        }
        // A source that ignores ranges: whatever comes, begin must say which bytes they are.
        if let whole = try await fixture.publishIgnoringRanges(data, as: uniqueName("range-whole")) {
            let range = size / 3..<size / 3 * 2
            let sink = ConformanceSink(.init(requestedOffset: range.lowerBound))
            var ranged = job(whole, offset: range.lowerBound)
            ranged.rangeEnd = range.upperBound
            let result = await transfer(ranged, into: sink)
            if recorder.expect(result.isFinished, "fetching a range from a source that ignores ranges failed: \(result)") {
                expectContract(sink, finished: true, recorder)
                expectHonestRange(sink, of: data, "a range from a source that ignores ranges", recorder)
            }
        }
    }

    /// The bytes written are the source's at the offsets `begin` reported: from its `offset` to
    /// its `end` (the resource's end when it gave none).
    private func expectHonestRange(_ sink: ConformanceSink, of data: Data, _ what: String, _ recorder: CheckRecorder) {
        let start = Int(sink.response?.offset ?? 0)
        let end = Int(sink.response?.end ?? Int64(data.count))
        guard recorder.expect(0 <= start && start <= end && end <= data.count,
                              "for \(what), begin reported bytes \(start)..<\(end) of a \(data.count)-byte resource") else { return }
        recorder.expect(sink.data == data[start..<end],
                        "for \(what), the \(sink.data.count) bytes written are not the source's bytes \(start)..<\(end) that begin reported")
    }

    func checkSegments(_ recorder: CheckRecorder) async throws {
        guard transport.capabilities.contains(.segments) else {
            throw Skip(reason: "the transport does not declare the .segments capability")
        }
        let data = sampleData(options.rangedResourceSize, seed: 12)
        let connections = options.rangeConnections
        guard let whole = try await fixture.publishIgnoringRanges(data, as: uniqueName("ranges-whole")) else {
            throw Skip(reason: "the fixture has no URL that answers ranges with the whole resource (publishIgnoringRanges)")
        }
        let url = try await fixture.publish(data, as: uniqueName("ranges"))
        var behaviour = ConformanceSink.Behaviour()
        behaviour.acceptsSegments = true
        // The other connections get to answer before the first one has fetched everything.
        behaviour.holdsForSegmentsAfter = 1 << 20

        let sink = ConformanceSink(behaviour)
        let result = await transfer(job(url, connections: connections), into: sink)
        if recorder.expect(result.isFinished, "downloading \(data.count) bytes over \(connections) connections failed: \(result)") {
            expectSegments(sink, of: data, recorder)
            recorder.expect(!sink.segments.isEmpty,
                            "the transport declares .segments but fetched \(data.count) bytes allowed \(connections) connections without asking for a segment")
        }

        // A source announcing ranges that answers each with the whole resource (HTTP 200).
        let wholeSink = ConformanceSink(behaviour)
        let wholeResult = await transfer(job(whole, connections: connections), into: wholeSink)
        if recorder.expect(wholeResult.isFinished,
                           "downloading over \(connections) connections from a source answering ranges with the whole resource failed: \(wholeResult)") {
            expectSegments(wholeSink, of: data, recorder)
        }
    }

    /// The contract, the segments' rules, and the bytes: each segment's against the source's at
    /// its offsets, the whole as written against `data`.
    private func expectSegments(_ sink: ConformanceSink, of data: Data, _ recorder: CheckRecorder) {
        expectContract(sink, finished: true, recorder)
        for breach in sink.segmentBreaches { recorder.fail("segment rule broken: \(breach)") }
        for segment in sink.segments {
            let range = Int(segment.range.lowerBound)..<Int(segment.range.upperBound)
            guard recorder.expect(segment.data.count == range.count,
                                  "segment \(segment.range) got \(segment.data.count) of its \(range.count) bytes when the transfer returned") else { continue }
            recorder.expect(range.upperBound <= data.count && segment.data == data[range],
                            "segment \(segment.range) holds other bytes than the source's at those offsets (a whole-resource answer written at a range's place?)")
        }
        let offset = Int(sink.response?.offset ?? 0)
        recorder.expect(sink.assembled == data[offset...],
                        "the bytes written (\(sink.data.count) sequential from \(offset), \(sink.segments.count) segments) differ from the \(data.count) published")
    }

    func checkNotFound(_ recorder: CheckRecorder) async throws {
        let url = try await fixture.missingURL()
        let sink = ConformanceSink()
        let result = await transfer(job(url), into: sink)
        expectContract(sink, finished: false, recorder)
        guard let error = result.transportError else {
            recorder.fail("fetching a missing resource ended with \(result), expected a TransportError .not-found")
            return
        }
        recorder.expect(error.code == .notFound, "a missing resource failed with code \(error.code), expected not-found (\(error))")
        recorder.expect(!error.isRetryable, "a missing resource is reported as retryable: \(error)")
        recorder.expect(sink.data.isEmpty, "a missing resource produced \(sink.data.count) bytes")
    }

    func checkAuthenticationRefused(_ recorder: CheckRecorder) async throws {
        let data = sampleData(4096, seed: 7)
        guard let url = try await fixture.publishRefusingCredentials(data, as: uniqueName("refusing")) else {
            throw Skip(reason: "the fixture has no URL that refuses credentials (publishRefusingCredentials)")
        }
        let wrong = Credential(user: "conformance", password: "wrong-password")
        let sink = ConformanceSink(.init(answer: { _ in .useCredential(wrong) }))
        let result = await transfer(job(url), into: sink)
        expectContract(sink, finished: false, recorder)
        guard let error = result.transportError else {
            recorder.fail("refused credentials ended with \(result), expected a TransportError .authentication-failed")
            return
        }
        recorder.expect([.authenticationFailed, .accessDenied].contains(error.code),
                        "refused credentials failed with code \(error.code), expected authentication-failed or access-denied (\(error))")
        recorder.expect(!error.isRetryable, "refused credentials are reported as retryable: \(error)")
        recorder.expect(sink.data.isEmpty, "refused credentials still produced \(sink.data.count) bytes")
        recorder.expect(sink.challenges.count <= 10, "the transport asked \(sink.challenges.count) times for refused credentials")
        if sink.challenges.count > 1 {
            recorder.expect(sink.challenges.last!.previousFailureCount > 0,
                            "a challenge repeated after a refused answer must count the refusals (previousFailureCount)")
        }
    }

    func checkDroppedConnection(_ recorder: CheckRecorder) async throws {
        let data = sampleData(options.resourceSize, seed: 8)
        let cut = data.count / 3
        guard let url = try await fixture.publishDropping(data, as: uniqueName("dropping"), after: cut) else {
            throw Skip(reason: "the fixture has no URL whose connection drops (publishDropping)")
        }
        let sink = ConformanceSink()
        let result = await transfer(job(url), into: sink)
        expectContract(sink, finished: false, recorder)
        guard let error = result.transportError else {
            recorder.fail("a connection dropped after \(cut) bytes ended with \(result), expected a retryable TransportError")
            return
        }
        recorder.expect(error.isRetryable, "a dropped connection is reported as not retryable: \(error)")
        recorder.expect(sink.data.count <= cut, "received \(sink.data.count) bytes from a connection dropped after \(cut)")
        recorder.expect(sink.data == data.prefix(sink.data.count), "the bytes received before the drop differ from the published ones")
    }

    func checkBackPressure(_ recorder: CheckRecorder) async throws {
        let data = sampleData(options.largeResourceSize, seed: 9)
        let url = try await fixture.publish(data, as: uniqueName("large"))
        let behaviours: [(String, ConformanceSink.Behaviour)] = [
            ("a slow write", .init(delay: .milliseconds(5))),
            ("a refusing tryWrite", .init(delay: .milliseconds(2), refusesTryWrites: true)),
        ]
        for (name, behaviour) in behaviours {
            let sink = ConformanceSink(behaviour)
            let result = await transfer(job(url), into: sink)
            guard recorder.expect(result.isFinished, "with \(name), the transfer failed: \(result)") else { continue }
            expectContract(sink, finished: true, recorder)
            let largest = sink.writeSizes.max() ?? 0
            recorder.expect(largest <= options.maxBytesPerWrite,
                            "with \(name), one chunk held \(largest) bytes (limit \(options.maxBytesPerWrite)): the transport buffered instead of pausing")
            recorder.expect(sink.data == data, "with \(name), the bytes arrived out of order or incomplete (\(sink.data.count) of \(data.count))")
        }
    }

    func checkCancellation(_ recorder: CheckRecorder) async throws {
        let data = sampleData(options.largeResourceSize, seed: 10)
        let url = try await fixture.publish(data, as: uniqueName("cancelled"))
        // Slow writes, so that the rest of the resource cannot arrive before the cancellation
        // even when this task is woken late on a busy machine.
        let sink = ConformanceSink(.init(delay: .milliseconds(400), refusesTryWrites: true))
        let run = TransferRun(transport: transport, job: job(url), sink: sink)
        // A timeout is reported just below, with what was seen.
        var waited = ""
        do {
            try await eventually("a first byte or the transfer's end", timeout: options.transferTimeout) {
                !sink.writeSizes.isEmpty || run.hasEnded
            }
        } catch let timedOut as TimedOut {
            waited = timedOut.description
        }
        guard recorder.expect(!sink.writeSizes.isEmpty, "no byte arrived before cancelling: \(run.hasEnded ? "the transfer ended first" : waited)") else {
            run.cancel()
            return
        }
        run.cancel()
        let result = await run.result(within: options.cancellationDeadline)
        switch result {
        case .timedOut(let budget):
            recorder.fail("the transfer did not stop within \(budget) after cancellation")
        case .failed(let error as TransportError) where error.code == .cancelled:
            break
        case .failed(is CancellationError):
            break
        default:
            recorder.fail("a cancelled transfer ended with \(result), expected CancellationError or TransportError .cancelled")
        }
        // Nothing marks a call that does not come: a stray one from a thread the transport left
        // running shows within this window (a watch, not a wait for an event).
        try await Task.sleep(for: .milliseconds(200))
        recorder.expect(sink.writesAfterEnd == 0, "the transport called the sink \(sink.writesAfterEnd) times after it returned")
        recorder.expect(sink.data.count < data.count, "the whole resource arrived although the transfer was cancelled")
    }

    func checkChallenges(_ recorder: CheckRecorder) async throws {
        let data = sampleData(options.resourceSize, seed: 11)
        guard let (url, credential) = try await fixture.publishProtected(data, as: uniqueName("protected")) else {
            throw Skip(reason: "the fixture has no URL behind authentication (publishProtected)")
        }
        recorder.expect(transport.capabilities.contains(.challenges), "the transport raises challenges but does not declare the .challenges capability")
        // The credential is for the protected folder: a challenge from anywhere else (where a
        // redirect led) is not answered with it, and fails the check.
        let protected = Self.protectedScope(of: url)
        let sink = ConformanceSink(.init(answer: { challenge in
            protected.contains(challenge.url) ? .useCredential(credential) : .cancelAuthenticationChallenge
        }))
        let result = await transfer(job(url), into: sink)
        for challenge in sink.challenges where !protected.contains(challenge.url) {
            recorder.fail("the challenge names \(challenge.url.redactedString), outside \(protected): "
                          + "the credential is given only to the protected URL's folder")
        }
        if recorder.expect(result.isFinished, "with the right credential, the transfer failed: \(result)") {
            expectContract(sink, finished: true, recorder)
            recorder.expect(!sink.challenges.isEmpty, "the protected resource arrived without any challenge")
            recorder.expect(sink.data == data, "the protected resource's bytes differ from the published ones")
        }

        let refusing = ConformanceSink(.init(answer: { _ in .cancelAuthenticationChallenge }))
        let cancelled = await transfer(job(url), into: refusing)
        expectContract(refusing, finished: false, recorder)
        recorder.expect(!refusing.challenges.isEmpty, "the protected resource raised no challenge")
        recorder.expect(refusing.challenges.count <= 3, "a cancelled challenge was asked again \(refusing.challenges.count) times")
        guard let error = cancelled.transportError else {
            recorder.fail("cancelling the challenge ended with \(cancelled), expected a TransportError")
            return
        }
        recorder.expect([.authenticationFailed, .accessDenied, .cancelled].contains(error.code),
                        "cancelling the challenge failed with code \(error.code), expected authentication-failed (\(error))")
        recorder.expect(!error.isRetryable, "cancelling the challenge is reported as retryable: \(error)")
        recorder.expect(refusing.data.isEmpty, "cancelling the challenge still produced \(refusing.data.count) bytes")
    }

    // MARK: Helpers

    /// Where the credential of a protected URL may go: the ``URLScope`` of its folder (for
    /// ``ServedFolderFixture``, the protected base URL), or the URL itself when it has no host.
    static func protectedScope(of url: URL) -> ProtectedScope {
        URLScope(url.deletingLastPathComponent()).map(ProtectedScope.scope) ?? .exactly(url)
    }

    /// The URLs a protected resource's credential may answer.
    enum ProtectedScope: Sendable, CustomStringConvertible {
        case scope(URLScope)
        case exactly(URL)

        func contains(_ asking: URL) -> Bool {
            switch self {
            case .scope(let scope): scope.contains(asking)
            case .exactly(let url): asking == url
            }
        }

        var description: String {
            switch self {
            case .scope(let scope): scope.description
            case .exactly(let url): url.redactedString
            }
        }
    }

    func job(_ url: URL, offset: Int64 = 0, validator: ResourceValidator? = nil, connections: Int = 1) -> TransferJob {
        var job = TransferJob(url: url, offset: offset, validator: validator, connectTimeout: options.connectTimeout,
                              idleTimeout: options.idleTimeout, assetIdentifier: "conformance")
        job.connectionsPerAsset = connections
        return job
    }

    func transfer(_ job: TransferJob, into sink: ConformanceSink) async -> TransferResult {
        await TransferRun(transport: transport, job: job, sink: sink).result(within: options.transferTimeout)
    }

    /// Downloads `url` once and returns the validator its `begin` reported.
    func probeValidator(_ url: URL, _ recorder: CheckRecorder) async throws -> ResourceValidator? {
        let sink = ConformanceSink()
        let result = await transfer(job(url), into: sink)
        guard result.isFinished else {
            recorder.fail("the first, full download of \(url.redactedString) failed: \(result)")
            throw Skip(reason: "a full download failed (see the full-download check)")
        }
        return sink.response?.validator
    }

    /// The rules every transfer must keep, whatever its outcome.
    func expectContract(_ sink: ConformanceSink, finished: Bool, _ recorder: CheckRecorder) {
        if finished {
            recorder.expect(sink.beginCount == 1, "begin was called \(sink.beginCount) times, expected exactly once")
        } else {
            recorder.expect(sink.beginCount <= 1, "begin was called \(sink.beginCount) times, expected at most once")
        }
        recorder.expect(sink.writesBeforeBegin == 0, "\(sink.writesBeforeBegin) chunk(s) were written before begin")
        recorder.expect(!sink.overlapped, "calls into the sink overlapped (the contract says they must not)")
    }

    func uniqueName(_ base: String) -> String { "\(base)-\(UUID().uuidString.prefix(8)).bin" }

    /// Reproducible pseudo-random bytes (SplitMix64), so a failure shows the same data again.
    func sampleData(_ count: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        var data = Data(count: count)
        // A word at a time, with no generic iteration: unoptimized builds run this too, and a byte
        // loop over megabytes held a thread of the cooperative pool for seconds on a busy machine.
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            var index = 0
            while index < count {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                if count - index >= 8 {
                    buffer.storeBytes(of: z.littleEndian, toByteOffset: index, as: UInt64.self)
                } else {
                    for byte in 0..<(count - index) { buffer[index + byte] = UInt8(truncatingIfNeeded: z >> (8 * byte)) }
                }
                index += 8
            }
        }
        return data
    }
}
