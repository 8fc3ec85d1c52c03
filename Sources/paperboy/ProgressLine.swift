import Foundation
import Paperboy
import Synchronization

/// One line redrawn on a terminal: delivered count, bytes, rate, and why anything waits.
final class ProgressLine: Sendable {
    private let library: Library
    private let total: Int
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(library: Library, total: Int) {
        self.library = library
        self.total = total
    }

    func start() {
        let library = self.library
        let total = self.total
        task.withLock {
            $0 = Task {
                var lastBytes: Int64 = 0
                var lastTime = ContinuousClock.now
                var rate = 0.0
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    let activity = library.activity
                    let now = ContinuousClock.now
                    let seconds = max((now - lastTime).secondsValue, 0.001)
                    let instant = Double(max(0, activity.bytesWritten - lastBytes)) / seconds
                    rate = rate == 0 ? instant : rate * 0.7 + instant * 0.3
                    lastBytes = activity.bytesWritten
                    lastTime = now
                    let remaining = activity.downloading + activity.queued + activity.waitingForRetry
                    var parts = ["\(max(0, total - remaining - activity.failed))/\(total) delivered"]
                    if activity.expectedBytes > 0 {
                        parts.append("\(Console.bytes(activity.bytesWritten)) of \(Console.bytes(activity.expectedBytes))")
                    }
                    parts.append("\(Console.bytes(Int64(rate)))/s")
                    if activity.downloading > 0 { parts.append("\(activity.downloading) downloading") }
                    if activity.queued > 0 { parts.append("\(activity.queued) queued") }
                    if activity.waitingForRetry > 0 { parts.append("\(activity.waitingForRetry) waiting to retry") }
                    if activity.waitingForNetwork > 0 {
                        parts.append("\(activity.waitingForNetwork) waiting for an allowed network (now \(library.networkStatus))")
                    }
                    if let limit = library.bandwidthLimiter.bytesPerSecond {
                        parts.append("limit \(Console.bytes(limit))/s")
                    }
                    if activity.failed > 0 { parts.append("\(activity.failed) failed") }
                    FileHandle.standardOutput.write(Data(("\r\u{1B}[2K" + parts.joined(separator: " · ")).utf8))
                }
            }
        }
    }

    func stop() {
        task.withLock { $0?.cancel() }
        FileHandle.standardOutput.write(Data("\r\u{1B}[2K".utf8))
    }
}
