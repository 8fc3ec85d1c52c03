/// Tells a stalled request: one whose source sent nothing for its idle timeout while the
/// transfer was not paused by back-pressure (time paused does not count). Curl thread only.
///
/// The curl thread looks every 250 ms or so, after a `curl_multi_perform`, without reading the
/// clock per chunk: the request counts callbacks with bytes (`activity`), and a look that sees
/// the count unchanged since the last one knows that no perform since read anything.
///
/// Silence is counted up to the start of the last perform, not to the look: bytes that came
/// before a perform started are read by it, while bytes that came after wait in the socket for
/// the next one. So the time the curl thread spends away from this request during a perform
/// (another transfer's sink writing to a slow disk, the thread not scheduled on a loaded
/// machine) is not taken for the source's silence.
struct IdleWatch {
    /// How long a source may stay silent.
    let timeout: Duration
    /// The `activity` seen at the last look, and since when it has not changed.
    private var seenActivity: UInt64
    private var quietSince: ContinuousClock.Instant

    /// Starts watching (when the request enters the multi handle).
    init(timeout: Duration, activity: UInt64, at now: ContinuousClock.Instant) {
        self.timeout = timeout
        seenActivity = activity
        quietSince = now
    }

    /// Whether the source has been silent for the timeout, looked at `now`, after a
    /// `curl_multi_perform` that started at `performStart`.
    mutating func isStalled(
        activity: UInt64, isPaused: Bool, performStart: ContinuousClock.Instant, now: ContinuousClock.Instant
    ) -> Bool {
        if activity != seenActivity || isPaused {
            seenActivity = activity
            quietSince = now
            return false
        }
        return performStart - quietSince >= timeout
    }
}
