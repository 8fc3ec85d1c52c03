import Paperboy
import PaperboyConfig
import PaperboyExec
import PaperboyFile
import PaperboyHTTP

/// The transports the `paperboy` tool ships, in one place.
enum Transports {
    /// The shipped transports, plus out-of-process helpers: `paperboy-transport-SCHEME` found on
    /// `PATH` for schemes that assets use and nothing shipped serves, then every `[[transports]]`
    /// entry of `config` (an explicit entry wins, even over a shipped transport).
    static func registry(for config: PaperboyConfiguration? = nil) -> TransportRegistry {
        var registry = TransportRegistry([
            FileTransport(),
            HTTPTransport(),
        ])
        guard let config else { return registry }
        let configured = Set(config.transports.map(\.scheme))
        let used = Set(config.issues.flatMap { $0.assets.compactMap { $0.url.scheme?.lowercased() } })
        for scheme in used.subtracting(registry.schemes).subtracting(configured).sorted() {
            if let helper = ExecTransport.discover(scheme: scheme) { registry.register(helper) }
        }
        for entry in config.transports {
            registry.register(ExecTransport(scheme: entry.scheme, command: entry.command))
        }
        return registry
    }
}
