import Crypto
import Foundation

/// Server-side checks of HTTP Basic, Digest (RFC 7616, MD5, qop=auth) and Bearer credentials.
public enum ServerAuth {
    /// The `WWW-Authenticate` value asking for Basic.
    public static func basicChallenge(realm: String) -> String { "Basic realm=\"\(realm)\"" }

    /// Whether `request` carries Basic credentials `user`:`password`.
    public static func isBasic(_ request: ServerRequest, user: String, password: String) -> Bool {
        request.header("authorization") == "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// The `WWW-Authenticate` value asking for Digest.
    public static func digestChallenge(realm: String, nonce: String) -> String {
        "Digest realm=\"\(realm)\", qop=\"auth\", nonce=\"\(nonce)\", algorithm=MD5"
    }

    /// Whether `request` carries a valid Digest response for `user`:`password`.
    public static func isDigest(_ request: ServerRequest, user: String, password: String, realm: String, nonce: String) -> Bool {
        guard let header = request.header("authorization"), header.hasPrefix("Digest ") else { return false }
        let fields = parameters(String(header.dropFirst(7)))
        guard fields["username"] == user, fields["realm"] == realm, fields["nonce"] == nonce,
              let uri = fields["uri"], let response = fields["response"] else { return false }
        let ha1 = md5("\(user):\(realm):\(password)")
        let ha2 = md5("\(request.method):\(uri)")
        let expected: String
        if let qop = fields["qop"], let nc = fields["nc"], let cnonce = fields["cnonce"] {
            expected = md5("\(ha1):\(nonce):\(nc):\(cnonce):\(qop):\(ha2)")
        } else {
            expected = md5("\(ha1):\(nonce):\(ha2)")
        }
        return expected == response
    }

    /// Whether `request` carries `Authorization: Bearer token`.
    public static func isBearer(_ request: ServerRequest, token: String) -> Bool {
        request.header("authorization") == "Bearer \(token)"
    }

    private static func md5(_ text: String) -> String {
        Insecure.MD5.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private static func parameters(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        let scanner = Scanner(string: text)
        scanner.charactersToBeSkipped = CharacterSet(charactersIn: " ,")
        while !scanner.isAtEnd {
            guard let name = scanner.scanUpToString("="), scanner.scanString("=") != nil else { break }
            var value: String?
            if scanner.scanString("\"") != nil {
                value = scanner.scanUpToString("\"") ?? ""
                _ = scanner.scanString("\"")
            } else {
                value = scanner.scanUpToString(",")
            }
            result[name.trimmingCharacters(in: .whitespaces).lowercased()] = value?.trimmingCharacters(in: .whitespaces)
        }
        return result
    }
}
