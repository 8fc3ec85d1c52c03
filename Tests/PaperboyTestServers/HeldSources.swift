import Foundation

/// A URL and its mirror (two ``FaultServer``s) serving the same `data`, where every answer sends
/// its first `bytes`, then waits until the test calls ``release()``: a download split over
/// them holds still, its figures there to be read (an event, where a sleep would guess).
public final class HeldSources: Sendable {
    /// The asset's URL's server.
    public let main: FaultServer
    /// Its mirror's server.
    public let mirror: FaultServer
    private let held = ThreadBarrier(parties: 1)

    /// Starts both servers on ephemeral ports.
    public init(serving data: Data, holdingAfter bytes: Int = 1 << 20) throws {
        let held = self.held
        main = try FaultServer { .serving(data, for: $0, fault: .holdAfter(bytes, until: { held.wait() })) }
        mirror = try FaultServer { .serving(data, for: $0, fault: .holdAfter(bytes, until: { held.wait() })) }
    }

    /// The asset's URL, `/big.bin` on ``main``.
    public var url: URL { main.url("/big.bin") }
    /// The mirror's URL, `/big.bin` on ``mirror``.
    public var mirrorURL: URL { mirror.url("/big.bin") }

    /// Lets every answer, held or to come, go on.
    public func release() { held.release() }

    /// Releases the answers and stops both servers.
    public func stop() {
        held.release()
        main.stop()
        mirror.stop()
    }
}
