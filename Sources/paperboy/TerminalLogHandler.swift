import Logging
import Paperboy

/// A log handler writing to standard error with control characters escaped
/// (``TerminalText``): log lines quote servers, helpers (their stderr) and catalogs.
struct TerminalLogHandler: LogHandler {
    var base: StreamLogHandler

    var metadataProvider: Logger.MetadataProvider? {
        get { base.metadataProvider }
        set { base.metadataProvider = newValue }
    }

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(TerminalText.escape(event.message.description, keepingNewlines: true))"
        base.log(event: event)
    }
}
