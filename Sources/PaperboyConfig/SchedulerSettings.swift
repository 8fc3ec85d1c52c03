/// The `[scheduler]` section: how many transfers run and how failures are retried.
public struct SchedulerSettings: Sendable, Equatable {
    /// Transfers running at once across all hosts (`max_concurrent`), default 4.
    public var maxConcurrent: Int
    /// Transfers running at once against one host (`max_per_host`), default 4.
    public var maxPerHost: Int
    /// Consecutive attempts without progress before an asset fails (`retry_attempts`), default 5;
    /// an attempt that advanced the durable offset restarts the count.
    public var retryAttempts: Int
    /// The delay before the first retry, doubled each time (`retry_base_delay`), default 1 s.
    public var retryBaseDelay: Duration
    /// The longest delay between retries (`retry_max_delay`), default 5 min.
    public var retryMaxDelay: Duration
    /// How long an asset may go without progress before it fails even with attempts left
    /// (`no_progress_timeout`); `nil` (the default, `"off"`) sets no limit.
    public var noProgressTimeout: Duration?
    /// How long connecting to a source may take (`connect_timeout`), default 30 s.
    public var connectTimeout: Duration
    /// How long a transfer may receive nothing before it fails as stalled (`idle_timeout`),
    /// default 60 s; waiting for the bandwidth limit or the disk does not count.
    public var idleTimeout: Duration
    /// How long a one-shot command (`paperboy sync`) waits for a retry (`max_sync_wait`), default
    /// 60 s: an asset whose retry is due later is left to wait in the library (the daemon, or the
    /// next sync, takes it up) and the command exits with 75.
    public var maxSyncWait: Duration

    /// Creates scheduler settings; the defaults are those of an absent `[scheduler]` section.
    public init(
        maxConcurrent: Int = 4,
        maxPerHost: Int = 4,
        retryAttempts: Int = 5,
        retryBaseDelay: Duration = .seconds(1),
        retryMaxDelay: Duration = .seconds(300),
        noProgressTimeout: Duration? = nil,
        connectTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(60),
        maxSyncWait: Duration = .seconds(60)
    ) {
        self.maxConcurrent = maxConcurrent
        self.maxPerHost = maxPerHost
        self.retryAttempts = retryAttempts
        self.retryBaseDelay = retryBaseDelay
        self.retryMaxDelay = retryMaxDelay
        self.noProgressTimeout = noProgressTimeout
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.maxSyncWait = maxSyncWait
    }
}
