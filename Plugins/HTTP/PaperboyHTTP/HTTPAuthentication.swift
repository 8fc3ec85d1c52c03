import Foundation
import Paperboy

/// An authentication scheme offered by a server in `WWW-Authenticate` or `Proxy-Authenticate`.
struct HTTPAuthentication: Sendable, Equatable {
    enum Scheme: String, Sendable, Comparable {
        case bearer, basic, digest

        /// Digest is tried before Basic (it never sends the password), Basic before Bearer.
        private var preference: Int {
            switch self {
            case .digest: 0
            case .basic: 1
            case .bearer: 2
            }
        }

        static func < (lhs: Scheme, rhs: Scheme) -> Bool { lhs.preference < rhs.preference }

        var challengeKind: AuthChallenge.Kind {
            switch self {
            case .basic: .httpBasic
            case .digest: .httpDigest
            case .bearer: .httpBearer
            }
        }
    }

    var scheme: Scheme
    var realm: String?

    /// The schemes Paperboy supports among `headers` (each a challenge header value), best first.
    ///
    /// A header may hold several challenges (`Digest realm="a", nonce="b", Basic realm="a"`):
    /// a challenge starts at a token that is not followed by `=`.
    static func offered(in headers: [String]) -> [HTTPAuthentication] {
        var found: [HTTPAuthentication] = []
        for header in headers {
            for challenge in split(header) {
                guard let scheme = Scheme(rawValue: challenge.scheme.lowercased()) else { continue }
                if !found.contains(where: { $0.scheme == scheme }) {
                    found.append(HTTPAuthentication(scheme: scheme, realm: challenge.parameters["realm"]))
                }
            }
        }
        return found.sorted { $0.scheme < $1.scheme }
    }

    private static func split(_ header: String) -> [(scheme: String, parameters: [String: String])] {
        var result: [(scheme: String, parameters: [String: String])] = []
        var index = header.startIndex
        func skipSeparators() {
            while index < header.endIndex, header[index] == " " || header[index] == "," || header[index] == "\t" {
                index = header.index(after: index)
            }
        }
        func token() -> String {
            let start = index
            while index < header.endIndex, !" ,=\t".contains(header[index]) { index = header.index(after: index) }
            return String(header[start..<index])
        }
        while true {
            skipSeparators()
            guard index < header.endIndex else { break }
            let word = token()
            guard !word.isEmpty else { index = header.index(after: index); continue }
            var lookahead = index
            while lookahead < header.endIndex, header[lookahead] == " " { lookahead = header.index(after: lookahead) }
            if lookahead < header.endIndex, header[lookahead] == "=", !result.isEmpty {
                // name=value (or a token68 such as a base64 blob ending in '=').
                index = header.index(after: lookahead)
                while index < header.endIndex, header[index] == " " { index = header.index(after: index) }
                var value = ""
                if index < header.endIndex, header[index] == "\"" {
                    index = header.index(after: index)
                    while index < header.endIndex, header[index] != "\"" {
                        if header[index] == "\\" { index = header.index(after: index) }
                        if index < header.endIndex { value.append(header[index]); index = header.index(after: index) }
                    }
                    if index < header.endIndex { index = header.index(after: index) }
                } else {
                    value = token()
                }
                result[result.count - 1].parameters[word.lowercased()] = value
            } else {
                result.append((word, [:]))
            }
        }
        return result
    }
}
