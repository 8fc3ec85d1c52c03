// A library in a process of its own, for the library behaviour suite's kill scenarios: it opens
// the library in LIBRARY_FOLDER with the file and HTTP transports, lives the first life given as
// JSON (`BehaviourLives.FirstLife`), writes one byte to standard output at its kill point, and
// waits there for the SIGKILL the suite sends after the byte. The store's batch delay is an hour
// (as if the kill came at any instant of its 25 ms batch window): what the relaunch finds is what
// the library commits on purpose before it tells the app.
//
//   BehaviourKillApp LIBRARY_FOLDER FIRST_LIFE_JSON
import BehaviourLives
import Foundation
@testable import Paperboy
import PaperboyFile
import PaperboyHTTP

let arguments = CommandLine.arguments
guard arguments.count == 3, let life = try? JSONDecoder().decode(FirstLife.self, from: Data(arguments[2].utf8)) else {
    FileHandle.standardError.write(Data("usage: BehaviourKillApp LIBRARY_FOLDER FIRST_LIFE_JSON\n".utf8))
    exit(2)
}
var configuration = Library.Configuration()
configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .wired))
configuration.progressInterval = .milliseconds(20)
configuration.storeBatchDelay = .seconds(3600)
let library = try Library.open(at: URL(fileURLWithPath: arguments[1]), transports: TransportRegistry([FileTransport(), .http()]),
                               configuration: configuration)
do {
    try await life.run(on: library) {
        var byte: UInt8 = 0x21
        _ = write(1, &byte, 1)
        while true { try? await Task.sleep(for: .seconds(3600)) }
    }
} catch {
    FileHandle.standardError.write(Data("BehaviourKillApp: \(life): \(error)\n".utf8))
    exit(1)
}
while true { try await Task.sleep(for: .seconds(3600)) }
