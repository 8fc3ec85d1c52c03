import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

@Suite("Network", .timeLimit(.minutes(2)))
struct NetworkTests {
    @Test(arguments: NetworkStatus.Kind.allCases)
    func policyMatrix(_ kind: NetworkStatus.Kind) {
        for expensive in [false, true] {
            let status = NetworkStatus(kind: kind, isExpensive: expensive)
            for mode in [Library.Configuration.Mode.foreground, .background] {
                let base: NetworkPolicy = mode == .background ? .unmeteredOnly : .any
                for override in [nil, NetworkPolicyOverride(allowedKinds: [.wifi]), NetworkPolicyOverride(allowsExpensive: true),
                                 NetworkPolicyOverride(allowedKinds: [.cellular], allowsExpensive: true)] {
                    let policy = base.applying(override)
                    var expected = kind != .none
                    let kinds = override?.allowedKinds ?? (mode == .background ? [.wired, .wifi, .other] : [.wired, .wifi, .cellular, .other])
                    expected = expected && kinds.contains(kind)
                    let allowsExpensive = override?.allowsExpensive ?? (mode == .foreground)
                    expected = expected && (allowsExpensive || !expensive)
                    #expect(policy.allows(status) == expected, "\(status) \(mode) \(String(describing: override))")
                }
            }
        }
    }

    @Test func constrainedAndRoamingAreRespected() {
        #expect(!NetworkPolicy(allowsConstrained: false).allows(NetworkStatus(kind: .wifi, isConstrained: true)))
        #expect(NetworkPolicy().allows(NetworkStatus(kind: .wifi, isConstrained: true)))
        #expect(!NetworkPolicy.unmeteredOnly.allows(NetworkStatus(kind: .wired, isRoaming: true)))
    }

    @Test func overridesParse() throws {
        #expect(try NetworkStatus.parse("cellular,expensive") == NetworkStatus(kind: .cellular, isExpensive: true))
        #expect(try NetworkStatus.parse(" wifi ") == NetworkStatus(kind: .wifi))
        #expect(try NetworkStatus.parse("constrained,roaming").isRoaming)
        for bad in ["cellular,wifi", "5g", "wifi,cheap"] {
            #expect(throws: LibraryError.self, "\(bad)") { try NetworkStatus.parse(bad) }
        }
    }

    /// A fake /proc and /sys tree.
    func fakeSystem(defaultInterface: String?, interfaces: [String: [String: String]]) throws -> (URL, URL, TempFolder) {
        let folder = TempFolder()
        let proc = folder.file("proc")
        let sys = folder.file("sys")
        try FileManager.default.createDirectory(at: proc.appendingPathComponent("net"), withIntermediateDirectories: true)
        var route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
        for name in interfaces.keys.sorted() {
            route += "\(name)\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
        }
        if let defaultInterface {
            route += "\(defaultInterface)\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
        }
        try route.write(to: proc.appendingPathComponent("net/route"), atomically: true, encoding: .utf8)
        for (name, files) in interfaces {
            let dir = sys.appendingPathComponent("class/net/\(name)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (file, content) in files {
                if content == "<dir>" {
                    try FileManager.default.createDirectory(at: dir.appendingPathComponent(file), withIntermediateDirectories: true)
                } else {
                    try content.write(to: dir.appendingPathComponent(file), atomically: true, encoding: .utf8)
                }
            }
        }
        return (proc, sys, folder)
    }

    @Test func linuxClassificationFromSysfs() throws {
        let interfaces: [String: [String: String]] = [
            "eth0": ["type": "1\n", "device": "<dir>", "uevent": "INTERFACE=eth0\n"],
            "wlan0": ["type": "1\n", "device": "<dir>", "wireless": "<dir>", "uevent": "DEVTYPE=wlan\n"],
            "phy0if": ["type": "1\n", "phy80211": "<dir>"],
            "wwan0": ["type": "65534\n", "uevent": "DEVTYPE=wwan\nINTERFACE=wwan0\n"],
            "docker0": ["type": "1\n", "uevent": "DEVTYPE=bridge\n"],
            "veth1": ["type": "1\n"],
        ]
        let expected: [String: NetworkStatus.Kind] = [
            "eth0": .wired, "wlan0": .wifi, "phy0if": .wifi, "wwan0": .cellular, "docker0": .other, "veth1": .other,
        ]
        for (name, kind) in expected {
            let (proc, sys, folder) = try fakeSystem(defaultInterface: name, interfaces: interfaces)
            let monitor = LinuxNetworkMonitor(procRoot: proc, sysRoot: sys, isMetered: { $0 == "wwan0" })
            let status = monitor.read()
            #expect(status.kind == kind, "\(name)")
            #expect(status.interface == name)
            #expect(status.isExpensive == (name == "wwan0"))
            _ = folder
        }
        let (proc, sys, folder) = try fakeSystem(defaultInterface: nil, interfaces: interfaces)
        #expect(LinuxNetworkMonitor(procRoot: proc, sysRoot: sys, isMetered: { _ in false }).read().kind == NetworkStatus.Kind.none)
        _ = folder
    }

    @Test func aNetworkSwitchPausesAndResumesWithDidResume() async throws {
        let folder = TempFolder()
        let data = randomData(2 << 20)
        let transport = InMemoryTransport(chunkSize: 32 * 1024, chunkDelay: .milliseconds(2))
        // The first attempt stalls after 512 KiB, so the switch always finds it running.
        let url = transport.serve(data, at: "issue.zip", script: [.stallAfter(512 * 1024)])
        let monitor = FixedNetworkMonitor(NetworkStatus(kind: .wifi))
        var configuration = Library.Configuration.forTests()
        configuration.networkMonitor = monitor
        configuration.checkpointInterval = .milliseconds(50)
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date())
            .addAsset(AssetRequest(url: url, network: NetworkPolicyOverride(allowedKinds: [.wifi, .wired])))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("some bytes") { asset.totalBytesWritten > 256 * 1024 }
        monitor.set(NetworkStatus(kind: .cellular, isExpensive: true))
        try await eventually("waiting for network") { asset.state == .waiting(.network) }
        let kept = asset.totalBytesWritten
        #expect(kept > 0)
        #expect(try library.activity.downloading == 0)
        await library.waitUntilIdle()   // network waits do not count as busy
        monitor.set(NetworkStatus(kind: .wired))
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        #expect(delegate.events.contains { if case .resumed = $0 { return true } else { return false } })
        #expect(transport.jobs.count == 2)
        #expect(transport.jobs.last?.offset ?? 0 > 0)
        await library.close()
    }

    @Test func localFilesIgnoreTheNetwork() async throws {
        let folder = TempFolder()
        let source = folder.file("source.txt")
        try Data("local".utf8).write(to: source)
        var configuration = Library.Configuration.forTests()
        configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .none))
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([LocalTransport()]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: source, destinationPath: "x.txt"))
        try await asset.download()
        await library.waitUntilIdle()
        #expect(asset.state == .delivered)
        await library.close()
    }

    @Test func withoutAnAllowedNetworkAssetsWaitRatherThanFail() async throws {
        let folder = TempFolder()
        let transport = InMemoryTransport()
        let url = transport.serve(Data("x".utf8), at: "x")
        var configuration = Library.Configuration.forTests()
        configuration.mode = .background
        configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .cellular, isExpensive: true))
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let issue = try await library.addIssue(name: "i", date: Date())
        let waiting = try await issue.addAsset(AssetRequest(url: url))
        let optedIn = try await issue.addAsset(AssetRequest(url: url, destinationPath: "x", network: NetworkPolicyOverride(
            allowedKinds: [.cellular], allowsExpensive: true)))
        try await waiting.download()
        try await optedIn.download()
        await library.waitUntilIdle()
        #expect(waiting.state == .waiting(.network))
        #expect(optedIn.state == .delivered)
        #expect(try library.activity.waitingForNetwork == 1)
        #expect(transport.jobs.count == 1)
        await library.close()
    }
}

/// A minimal local transport (the real one lives in PaperboyFile, which this target does not import).
struct LocalTransport: Transport {
    var schemes: Set<String> { ["file"] }
    var capabilities: TransportCapabilities { [.local] }
    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let data = try Data(contentsOf: job.url)
        try sink.begin(TransferResponse(offset: 0, expectedLength: Int64(data.count), validator: nil))
        try await sink.write(data)
    }
}
