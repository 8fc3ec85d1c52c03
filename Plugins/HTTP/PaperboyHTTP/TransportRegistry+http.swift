import Paperboy

extension Transport where Self == HTTPTransport {
    /// An ``HTTPTransport``, for registries written as lists: `TransportRegistry([.http()])`.
    ///
    /// - Parameters:
    ///   - caFile: certificate authorities (PEM) to trust instead of the system store.
    ///   - maxRedirects: redirects followed at most (default 10).
    ///   - bufferSize: libcurl's receive buffer in bytes (default 512 KiB).
    ///   - userAgent: the `User-Agent` header.
    public static func http(
        caFile: String? = nil, maxRedirects: Int = 10, bufferSize: Int = 512 * 1024, userAgent: String? = nil
    ) -> HTTPTransport {
        HTTPTransport(caFile: caFile, maxRedirects: maxRedirects, bufferSize: bufferSize, userAgent: userAgent)
    }
}
