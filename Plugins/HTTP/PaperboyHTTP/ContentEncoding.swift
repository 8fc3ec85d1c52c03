import Foundation
import Paperboy

/// The rule that an encoded body is never taken for the file: a successful response whose
/// `Content-Encoding` names a coding other than `identity` is refused before any byte of its
/// body reaches the sink.
///
/// Every request says `Accept-Encoding: identity`, yet some servers compress anyway (Apache's
/// `mod_deflate` with `SetEnv force-gzip`, nginx's `gzip_static always`, reverse proxies and
/// CDNs). Such a body is not the file's bytes: stored, it would be delivered as the file
/// (checked only by a `sha256`), and resumed by range it would splice the compressed stream,
/// whose offsets are not the file's. Decoding it instead (libcurl's `CURLOPT_ACCEPT_ENCODING`)
/// would deliver the right bytes once, but a transfer cut short could not resume: the offset
/// on disk counts decoded bytes, a `Range` counts encoded ones, and a compressor does not
/// restart mid-stream. Refusing keeps every stored byte resumable and tells the operator what
/// to change on the server. Catalogs, fetched whole, follow the same rule: one rule for every
/// body this transport fetches.
enum ContentEncoding {
    /// Throws when `head` announces an encoded body.
    ///
    /// `Content-Encoding` is a comma-separated list of codings, possibly in several fields;
    /// codings compare without case (RFC 9110 §8.4). An empty list or only `identity` is the
    /// file itself.
    ///
    /// - Parameter url: the URL that answered, evaluated only for the error.
    /// - Throws: ``TransportError`` `.contentEncodingNotIdentity`, not retryable, naming the URL,
    ///   the encoding and what to change on the server.
    static func requireIdentity(_ head: ResponseHead, url: @autoclosure () -> URL) throws {
        let values = head.values("content-encoding")
        guard !values.isEmpty else { return }
        let codings = values.flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0.lowercased() != "identity" }
        guard !codings.isEmpty else { return }
        let url = url()
        // A server's text: escaped for a terminal, and kept short.
        let encoding = TerminalText.escape(String(codings.joined(separator: ", ").prefix(64)))
        throw TransportError(
            .contentEncodingNotIdentity,
            "refused the body of \(url.redactedString): the server sent it with Content-Encoding: \(encoding) although "
                + "Paperboy asks for the file as is (Accept-Encoding: identity), and an encoded body is neither the file's "
                + "bytes nor resumable by range; make the server send this file unencoded (Apache: remove 'SetEnv force-gzip' "
                + "for it, or set 'SetEnv no-gzip 1'; nginx: remove 'gzip_static always' or an added Content-Encoding header; "
                + "a CDN or proxy: turn compression off for this path)",
            url: url, isRetryable: false)
    }
}
