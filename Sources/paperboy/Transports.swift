import Paperboy
import PaperboyFile
import PaperboyHTTP

/// The transports the `paperboy` tool ships, in one place.
enum Transports {
    static func registry() -> TransportRegistry {
        TransportRegistry([
            FileTransport(),
            HTTPTransport(),
        ])
    }
}
