import Foundation
import Paperboy
import Testing

@Suite("URLScope: credentials bound to origins", .timeLimit(.minutes(2)))
struct URLScopeTests {
    func scope(_ text: String) throws -> URLScope { try #require(URLScope(string: text), "\(text) is a scope") }
    func url(_ text: String) throws -> URL { try #require(URL(string: text)) }

    @Test(arguments: [
        // Look-alike hosts: a prefix of the text is not the same host.
        ("http://127.0.0.1", "http://127.0.0.12:9000/x", false),
        ("http://127.0.0.1", "http://127.0.0.1.evil.net/x", false),
        ("https://cdn.example.com", "https://cdn.example.com.evil.net/a", false),
        ("https://cdn.example.com", "https://cdn.example.com@evil.net/a", false),
        ("https://cdn.example.com", "https://evilcdn.example.com/a", false),
        ("https://cdn.example.com", "https://cdn.example.com/a", true),
        // Ports: different ports are different origins; default ports are explicit.
        ("http://127.0.0.1:8080", "http://127.0.0.1:8081/a", false),
        ("http://127.0.0.1:8080", "http://127.0.0.1/a", false),
        ("http://example.com", "http://example.com:80/a", true),
        ("http://example.com:80/", "http://example.com/a", true),
        ("https://example.com", "https://example.com:443/a", true),
        ("https://example.com", "https://example.com:8443/a", false),
        ("sftp://files.example.com", "sftp://files.example.com:22/a", true),
        ("sftp://files.example.com", "sftp://files.example.com:2222/a", false),
        ("ftp://files.example.com:21", "ftp://files.example.com/a", true),
        // Schemes: case-insensitive, and http is not https.
        ("http://example.com", "https://example.com/a", false),
        ("https://example.com", "http://example.com/a", false),
        ("HTTPS://example.com", "https://example.com/a", true),
        // Hosts: case-insensitive, trailing dot ignored, IDNA-normalised.
        ("https://CDN.Example.COM", "https://cdn.example.com/a", true),
        ("https://cdn.example.com.", "https://cdn.example.com/a", true),
        ("https://cdn.example.com", "https://cdn.example.com./a", true),
        ("https://bücher.example", "https://xn--bcher-kva.example/a", true),
        ("https://xn--bcher-kva.example", "https://BÜCHER.example/a", true),
        ("https://bücher.example", "https://bucher.example/a", false),
        // Paths: on a `/` boundary only.
        ("https://example.com/a", "https://example.com/a", true),
        ("https://example.com/a", "https://example.com/a/", true),
        ("https://example.com/a", "https://example.com/a/b", true),
        ("https://example.com/a/", "https://example.com/a/b", true),
        ("https://example.com/a", "https://example.com/ab", false),
        ("https://example.com/a", "https://example.com/", false),
        ("https://example.com/a", "https://example.com/b/../a/c", true),
        ("https://example.com/a", "https://example.com/a/../b", false),
        ("https://example.com/", "https://example.com", true),
    ])
    func coversOnlyItsOrigin(match: String, request: String, expected: Bool) throws {
        #expect(try scope(match).contains(url(request)) == expected, "\(match) covering \(request)")
    }

    @Test func theLongestPathWins() throws {
        let rules = [("origin", "https://example.com"), ("premium", "https://example.com/premium"), ("other", "https://example.com/premium2")]
        let scoped = try rules.map { ($0.0, try scope($0.1)) }
        #expect(URLScope.mostSpecific(scoped, for: try url("https://example.com/premium/a.pdf"), scope: \.1)?.0 == "premium")
        #expect(URLScope.mostSpecific(scoped, for: try url("https://example.com/premium"), scope: \.1)?.0 == "premium")
        #expect(URLScope.mostSpecific(scoped, for: try url("https://example.com/premium2/a"), scope: \.1)?.0 == "other")
        #expect(URLScope.mostSpecific(scoped, for: try url("https://example.com/premiumX"), scope: \.1)?.0 == "origin")
        #expect(URLScope.mostSpecific(scoped, for: try url("https://example.org/premium"), scope: \.1) == nil)
    }

    @Test(arguments: ["files", "http://", "/tmp", "file:///tmp", "tar:archive", "https:///path"])
    func needsAHost(text: String) {
        #expect(URLScope(string: text) == nil)
    }

    @Test func describesItselfWithExplicitParts() throws {
        #expect(try scope("HTTPS://Bücher.Example.:443/a/").description == "https://xn--bcher-kva.example/a")
        #expect(try scope("http://127.0.0.1:8080").description == "http://127.0.0.1:8080")
    }

    @Test func originCredentialsNeverAnswerAProxyWithTheOriginsCredential() throws {
        let provider = OriginCredentials([
            .init(scope: try scope("http://cdn.example.com"), credential: Credential(user: "alice", password: "origin-secret")),
            .init(scope: try scope("http://proxy.example:3128"), credential: Credential(user: "bob", password: "proxy-secret")),
        ])
        let origin = try url("http://cdn.example.com/a.pdf")
        #expect(provider.credential(for: AuthChallenge(kind: .httpBasic, url: origin))?.user == "alice")
        let viaProxy = AuthChallenge(kind: .httpBasic, url: origin, isProxy: true, proxyURL: try url("http://proxy.example:3128"))
        #expect(provider.credential(for: viaProxy)?.user == "bob")
        let unknownProxy = AuthChallenge(kind: .httpBasic, url: origin, isProxy: true)
        #expect(provider.credential(for: unknownProxy) == nil)
        let otherProxy = AuthChallenge(kind: .httpBasic, url: origin, proxyURL: try url("http://cdn.example.com:3128"))
        #expect(otherProxy.isProxy)
        #expect(provider.credential(for: otherProxy) == nil)
        #expect(provider.credential(for: AuthChallenge(kind: .httpBasic, url: try url("http://127.0.0.12:9000/x"))) == nil)
    }
}
