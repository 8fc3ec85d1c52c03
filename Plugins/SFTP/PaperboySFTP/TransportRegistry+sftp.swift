import Foundation
import Paperboy

extension Transport where Self == SFTPTransport {
    /// An ``SFTPTransport``, for registries written as lists: `TransportRegistry([.sftp()])`.
    ///
    /// - Parameter configuration: known_hosts file, identities, read size and per-host rules.
    public static func sftp(_ configuration: SFTPTransport.Configuration = .init()) -> SFTPTransport {
        SFTPTransport(configuration: configuration)
    }
}
