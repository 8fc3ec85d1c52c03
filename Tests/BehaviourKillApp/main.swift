// A library in a process of its own, for the library behaviour suite's kill scenarios: it opens
// the library in LIBRARY_FOLDER with the file and HTTP transports, lives the first life given as
// JSON (`BehaviourLives.FirstLife`), writes one byte to standard output at its kill point, and
// waits there for the SIGKILL the suite sends after the byte.
//
//   BehaviourKillApp LIBRARY_FOLDER FIRST_LIFE_JSON
import BehaviourLives
import Foundation
import Paperboy
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
