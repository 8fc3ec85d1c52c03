import Paperboy
import PaperboyFile

/// The transports the `paperboy` tool ships, in one place.
enum Transports {
    static func registry() -> TransportRegistry {
        TransportRegistry([
            FileTransport(),
        ])
    }
}
