// The floor of many small files through Paperboy's own HTTP transport: 8 tasks, each one
// `TransferJob` into a sink that writes a partial file, then a rename; no scheduler, no store, no
// configuration, no lifecycle or delivery. What `paperboy sync` spends above this is the cost of
// the library's shape; what this spends above `curl -Z 8` is the transport's (docs/Benchmarks.md).
//
//   floor URLS_FILE OUTPUT_FOLDER      (one URL per line, as Benchmarks/http/run.sh writes them)
import Foundation
import Glibc
import Paperboy
import PaperboyHTTP

/// Writes what arrives to its file at once, on the transfer's thread.
final class FileSink: TransferSink {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }
    func begin(_ response: TransferResponse) throws {}
    func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = try tryWrite(bytes) }
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        var done = 0
        while done < bytes.count {
            let wrote = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            guard wrote > 0 else { throw CocoaError(.fileWriteUnknown) }
            done += wrote
        }
        return true
    }
    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { .performDefaultHandling }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: floor URLS_FILE OUTPUT_FOLDER\n".utf8))
    exit(2)
}
let urls = try String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n").compactMap { URL(string: String($0)) }
let output = arguments[2]
let transport = HTTPTransport()

@Sendable func fetch(_ url: URL) async throws {
    let name = url.lastPathComponent
    let partial = output + "/." + name + ".partial"
    let fd = open(partial, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw CocoaError(.fileWriteNoPermission) }
    defer { close(fd) }
    try await transport.transfer(TransferJob(url: url), into: FileSink(fd: fd))
    guard rename(partial, output + "/" + name) == 0 else { throw CocoaError(.fileWriteUnknown) }
}

try await withThrowingTaskGroup(of: Void.self) { group in
    var next = urls.makeIterator()
    for _ in 0..<8 { if let url = next.next() { group.addTask { try await fetch(url) } } }
    while try await group.next() != nil { if let url = next.next() { group.addTask { try await fetch(url) } } }
}
