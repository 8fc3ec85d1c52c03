#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire
import PaperboyDaemon
import PaperboyTesting
import Testing

/// docs/Daemon.md "Running it": a private socket in a private folder, a stale socket replaced and
/// a live one refused, at most 64 connections, `daemon.json` while serving, clients let go at stop.
@Suite("The daemon's socket", .timeLimit(.minutes(2)))
struct DaemonSocketTests {
    let home = DaemonHome()

    @Test func theSocketIsPrivateInAPrivateFolderAndAFolderOpenToOthersIsClosed() async throws {
        let folder = home.socket.deletingLastPathComponent()
        #expect(mkdir(folder.path, 0o700) == 0)
        #expect(chmod(folder.path, 0o755) == 0)
        try await home.withDaemon { _ in
            #expect(home.mode(home.socket) == 0o600)
            #expect(home.mode(folder) == 0o700, "an existing folder is made private")
            let client = try await WireClient.negotiated(home.socket)
            #expect(DaemonSocket.peerUID(client.fd) == getuid())
        }
    }

    @Test func aSocketLeftByADeadDaemonIsReplaced() async throws {
        try await home.withDaemon { _ in }
        // A daemon killed with SIGKILL leaves its socket file: bound, nobody listening.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in home.socket.path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(stale)
        try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
        #expect(FileManager.default.fileExists(atPath: home.socket.path))
        try await home.withDaemon { _ in
            _ = try await WireClient.negotiated(home.socket)
        }
    }

    @Test func aSecondDaemonOnASocketThatAnswersIsRefused() async throws {
        try await home.withDaemon { _ in
            let other = DaemonHome()
            do {
                let second = try await other.start(socket: home.socket)
                await second.stop()
                Issue.record("a second daemon started on \(home.socket.path)")
            } catch let error as LibraryError {
                #expect(error.code == .storage)
                #expect(error.message == "a daemon already serves \(home.socket.path)")
            }
            // The first one goes on, on its socket.
            _ = try await WireClient.negotiated(home.socket)
        }
    }

    @Test func theConnectionAfterTheSixtyFourthIsRefusedUntilOneLeaves() async throws {
        try await home.withDaemon { _ in
            var clients: [WireClient] = []
            for _ in 0..<DaemonServer.maxConnections { clients.append(try await WireClient.connect(home.socket)) }
            // Accepted in order: the 64 above are counted before this one.
            let extra = try await WireClient.connect(home.socket)
            let frames = try await extra.framesUntilClosed()
            #expect(frames.map(errorCode) == ["permission-denied"], "\(extra.transcript)")
            #expect(frames.first.map(json)?["message"] as? String == "too many connections (at most 64)")
            // The first 64 are served.
            #expect(try await clients[63].request("HELLO", #"{"protocols":[1]}"#).kind == "HELLO")
            clients[0].disconnect()
            try await eventually("a connection admitted once one of the 64 left") {
                // Refused (an ERROR, or the end) until the daemon has seen the first one leave.
                let client = try await WireClient.connect(home.socket)
                return (try? await client.request("HELLO", #"{"protocols":[1]}"#).kind) == "HELLO"
            }
        }
    }

    @Test func daemonJSONNamesTheDaemonWhileItServesPrivatelyAndGoesWhenItStops() async throws {
        let record = home.libraryURL.appendingPathComponent("daemon.json")
        try await home.withDaemon { daemon in
            #expect(home.mode(record) == 0o600)
            let written = try JSONDecoder().decode(DaemonRecord.self, from: Data(contentsOf: record))
            #expect(written == DaemonRecord(pid: getpid(), socket: home.socket.path))
            #expect(DaemonRecord.running(in: daemon.library.root) == written)
        }
        #expect(!FileManager.default.fileExists(atPath: record.path))
        #expect(!FileManager.default.fileExists(atPath: home.socket.path), "the socket is removed at stop")
    }

    @Test func stoppingDisconnectsEveryClientAndStopsListening() async throws {
        let daemon = try await home.start()
        let clients = [try await WireClient.negotiated(home.socket), try await WireClient.negotiated(home.socket)]
        _ = try await clients[1].request("SUBSCRIBE", #"{"id":1}"#)
        await daemon.stop()
        for client in clients {
            #expect(try await client.framesUntilClosed().isEmpty, "\(client.transcript)")
        }
        #expect(try DaemonSocket.connect(to: home.socket) == -1)
    }
}
