import Foundation
import Paperboy
import Synchronization

/// The live block a sync redraws on a terminal: one line per active transfer (name, bytes, %,
/// rate), a total line (delivered count, rate, ETA), and a line saying why anything waits.
///
/// Lines printed with ``print(_:)`` appear above the block and stay.
final class ProgressDisplay: Sendable {
    /// At most this many transfer lines; the rest are counted on one line.
    static let maxTransferLines = 6

    private struct State {
        var task: Task<Void, Never>?
        var drawnLines = 0
        var lastFrame: [String] = []
        var samples: [String: (bytes: Int64, rate: Double)] = [:]
        var lastTick = ContinuousClock.now
        /// The scheduler's network and limit, read about once a second (through a daemon, a request).
        var conditions = LibraryConditions(network: nil, bandwidthLimit: nil)
    }

    private let library: Library
    private let total: Int
    private let state = Mutex(State())

    /// - Parameters:
    ///   - total: the number of assets this sync wants delivered.
    init(library: Library, total: Int) {
        self.library = library
        self.total = total
    }

    func start() {
        state.withLock { state in
            state.task = Task { [self] in
                var frames = 0
                while !Task.isCancelled {
                    if frames % 4 == 0, let conditions = try? await library.conditions() {
                        self.state.withLock { $0.conditions = conditions }
                    }
                    frames += 1
                    try? await Task.sleep(for: .milliseconds(250))
                    if Task.isCancelled { break }
                    redraw()
                }
            }
        }
    }

    /// Erases the block; what was printed above it stays.
    func stop() {
        state.withLock { state in
            state.task?.cancel()
            state.task = nil
            Self.write(Self.erase(state.drawnLines))
            state.drawnLines = 0
        }
    }

    /// Prints a line above the live block.
    func print(_ line: String) {
        state.withLock { state in
            var text = Self.erase(state.drawnLines) + TerminalText.escape(line, keepingNewlines: true) + "\n"
            text += Self.draw(state.lastFrame)
            state.drawnLines = state.lastFrame.count
            Self.write(text)
        }
    }

    private func redraw() {
        let frame = makeFrame()
        state.withLock { state in
            Self.write(Self.erase(state.drawnLines) + Self.draw(frame))
            state.drawnLines = frame.count
            state.lastFrame = frame
        }
    }

    /// The lines of the block, from the library's state now.
    func makeFrame() -> [String] {
        let now = ContinuousClock.now
        let assets = library.downloadingAssets
        // A frame drawn from a failed read shows nothing waiting; the sync reports the error.
        let activity = (try? library.activity) ?? LibraryActivity()
        var transfers: [String] = []
        var running = 0
        var queued = 0
        var network = 0
        var paused = 0
        var retries: [Date] = []
        var hosts: [String: Int] = [:]
        var bytesLeft: Int64 = 0
        var sizesKnown = true
        var totalRate = 0.0
        var seen: [String: (bytes: Int64, rate: Double)] = [:]
        let (previous, conditions) = state.withLock { state in
            defer { state.lastTick = now }
            return ((state.samples, (now - state.lastTick).secondsValue), state.conditions)
        }
        let seconds = max(previous.1, 0.001)
        let width = Self.terminalWidth()
        for asset in assets {
            let written = asset.totalBytesWritten
            let expected = asset.expectedTotalBytes
            if let expected { bytesLeft = bytesLeft.addingSaturated(max(0, expected - written)) } else { sizesKnown = false }
            switch asset.state {
            case .downloading:
                running += 1
                let last = previous.0[asset.identifier]
                let instant = Double(max(0, written - (last?.bytes ?? written))) / seconds
                let rate = last.map { $0.rate == 0 ? instant : $0.rate * 0.7 + instant * 0.3 } ?? 0
                seen[asset.identifier] = (written, rate)
                totalRate += rate
                guard transfers.count < Self.maxTransferLines else { continue }
                let name = SyncPlan.displayName(asset)
                var line = "  " + Self.fit(TerminalText.escape(name), to: 32).padding(toLength: 32, withPad: " ", startingAt: 0)
                if let expected, expected > 0 {
                    line += "  \(Console.bytes(written)) of \(Console.bytes(expected))"
                    line += String(format: "  %3.0f%%", Double(written) * 100 / Double(expected))
                } else {
                    line += "  \(Console.bytes(written))"
                }
                line += "  \(Self.rate(rate))"
                transfers.append(line)
            case .waiting(.queued), .idle:
                queued += 1
            case .waiting(.network):
                network += 1
            case .waiting(.retry(let until, _)):
                retries.append(until)
            case .waiting(.hostLimit(let host)):
                hosts[host.isEmpty ? "local files" : host, default: 0] += 1
            case .waiting(.pausedByApp):
                paused += 1
            default:
                continue
            }
        }
        state.withLock { $0.samples = seen }
        if running > transfers.count { transfers.append("  … and \(running - transfers.count) more downloading") }

        // Counts a daemon reported (outside input): added without trapping.
        let remaining = [activity.queued, activity.waitingForRetry, activity.waitingForNetwork, activity.paused, activity.inInbox, activity.failed]
            .reduce(max(0, activity.downloading)) { $0.addingSaturated(max(0, $1)) }
        var totalParts = ["total: \(max(0, total.addingSaturated(-remaining)))/\(total) delivered"]
        if bytesLeft > 0 { totalParts.append("\(Console.bytes(bytesLeft))\(sizesKnown ? "" : "+") left") }
        totalParts.append(Self.rate(totalRate))
        if totalRate > 1, sizesKnown, bytesLeft > 0 {
            totalParts.append("ETA \(Self.duration(Double(bytesLeft) / totalRate))")
        }
        if let limit = conditions.bandwidthLimit { totalParts.append("limit \(Console.bytes(limit))/s") }
        if activity.failed > 0 { totalParts.append("\(activity.failed) failed") }

        var waits: [String] = []
        if network > 0 { waits.append("\(network) for an allowed network\(conditions.network.map { " (now \($0))" } ?? "")") }
        if let next = retries.min() {
            let delay = max(0, next.timeIntervalSinceNow)
            waits.append("\(retries.count) to retry (next in \(Self.duration(delay, tenths: true)))")
        }
        for (host, count) in hosts.sorted(by: { $0.key < $1.key }) { waits.append("\(count) behind the per-host limit for \(host)") }
        if queued > 0 { waits.append("\(queued) queued") }
        if paused > 0 { waits.append("\(paused) paused") }

        var frame = transfers
        frame.append(totalParts.joined(separator: " · "))
        if !waits.isEmpty { frame.append("waiting: " + waits.joined(separator: " · ")) }
        return frame.map { Self.fit($0, to: width - 1) }
    }

    // MARK: Terminal

    private static func erase(_ lines: Int) -> String {
        guard lines > 0 else { return "" }
        return "\r\u{1B}[2K" + String(repeating: "\u{1B}[1A\u{1B}[2K", count: lines - 1)
    }

    private static func draw(_ frame: [String]) -> String {
        frame.joined(separator: "\n")
    }

    private static func write(_ text: String) {
        guard !text.isEmpty else { return }
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 10 { return Int(size.ws_col) }
        return 80
    }

    /// `text` cut to `width` characters, with an ellipsis.
    static func fit(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        return String(text.prefix(max(1, width - 1))) + "…"
    }

    /// A rate in bytes per second, held within Int64's range: sizes a daemon reports are outside input.
    static func rate(_ bytesPerSecond: Double) -> String {
        "\(Console.bytes(bytesPerSecond < 9e18 ? Int64(max(0, bytesPerSecond)) : .max))/s"
    }

    /// `seconds` for a person: whole seconds (rounded up), minutes or hours; with `tenths`,
    /// tenths below 10 s (a retry 50 ms away is "in 0.1 s", not "in 1 s").
    static func duration(_ seconds: Double, tenths: Bool = false) -> String {
        if tenths, seconds < 9.95 { return String(format: "%.1f s", max(0, seconds)) }
        // A year at most: a size or a date from outside (a daemon) can make the figure absurd.
        let whole = Int(min(seconds, 366 * 86_400).rounded(.up))
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }
}
