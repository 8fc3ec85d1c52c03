// The URLSession row of Benchmarks/http/run.sh: what a Swift developer would write without
// Paperboy. Downloads each URL to the current folder under its last path component, at most
// PARALLEL at once, with FoundationNetworking's URLSession (itself on libcurl on Linux).
//
//   urlsession-fetch PARALLEL URL-LIST-FILE
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let arguments = CommandLine.arguments
guard arguments.count == 3, let parallel = Int(arguments[1]), parallel > 0,
      let list = try? String(contentsOfFile: arguments[2], encoding: .utf8)
else {
    FileHandle.standardError.write(Data("usage: urlsession-fetch PARALLEL URL-LIST-FILE\n".utf8))
    exit(2)
}
let urls = list.split(separator: "\n").compactMap { URL(string: String($0)) }
let configuration = URLSessionConfiguration.default
configuration.httpMaximumConnectionsPerHost = parallel
let session = URLSession(configuration: configuration)
let slots = DispatchSemaphore(value: parallel)
let group = DispatchGroup()
let failures = Mutex(0)
let folder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)

for url in urls {
    slots.wait()
    group.enter()
    session.downloadTask(with: url) { location, response, error in
        defer { slots.signal(); group.leave() }
        guard let location, error == nil, (response as? HTTPURLResponse)?.statusCode == 200 else {
            FileHandle.standardError.write(Data("\(url): \(error.map { "\($0)" } ?? "bad response")\n".utf8))
            failures.withLock { $0 += 1 }
            return
        }
        let destination = folder.appendingPathComponent(url.lastPathComponent)
        try? FileManager.default.removeItem(at: destination)
        do {
            try FileManager.default.moveItem(at: location, to: destination)
        } catch {
            FileHandle.standardError.write(Data("\(url): \(error)\n".utf8))
            failures.withLock { $0 += 1 }
        }
    }.resume()
}
group.wait()
exit(failures.withLock { $0 } == 0 ? 0 : 1)
