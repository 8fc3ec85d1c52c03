#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension NetworkPolicy {
    /// Whether `url` names a source reached without any network, to which network policies do
    /// not apply: a `file:` URL, or a host that is this machine or on the link itself: `localhost`
    /// and `*.localhost`, loopback addresses (`127.0.0.0/8`, `::1`) and link-local ones
    /// (`169.254.0.0/16`, `fe80::/10`), IPv4-mapped forms included.
    ///
    /// Such a source never waits for an allowed network, not even without a default route
    /// (kind ``NetworkStatus/Kind/none``). Other names are not resolved: a name that `/etc/hosts`
    /// maps to `127.0.0.1` still follows the policy.
    public static func isLocalSource(_ url: URL) -> Bool {
        if url.isFileURL { return true }
        guard var host = url.host?.lowercased(), !host.isEmpty else { return false }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if let zone = host.firstIndex(of: "%") { host = String(host[..<zone]) }
        if host.hasSuffix(".") { host.removeLast() }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return isLocalIPv4(withUnsafeBytes(of: &v4) { Array($0) })
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }), bytes[15] == 1 { return true }              // ::1
        if bytes[0] == 0xFE, bytes[1] & 0xC0 == 0x80 { return true }                            // fe80::/10
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {       // ::ffff:a.b.c.d
            return isLocalIPv4(Array(bytes[12..<16]))
        }
        return false
    }

    /// 127.0.0.0/8 or 169.254.0.0/16, from the address bytes in network order.
    private static func isLocalIPv4(_ bytes: [UInt8]) -> Bool {
        bytes[0] == 127 || (bytes[0] == 169 && bytes[1] == 254)
    }
}
