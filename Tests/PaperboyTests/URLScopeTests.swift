import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
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

    /// Odd spellings of a path, each with the answer a scope for `/premium/` (or the scope
    /// shown) must give. A spelling that servers read differently never matches a scope with a
    /// path (see ``URLScope``); what every server reads as inside the path does.
    @Test(arguments: [
        // Encoded dots, in every position and case: resolved as a server resolves them.
        ("http://h/premium/", "http://h/premium/%2e%2e/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/%2E%2E/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/.%2e/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/%2e./other/x.bin", false),
        ("http://h/premium/", "http://h/premium/%2E%2e/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/%2e%2e", false),
        ("http://h/premium/", "http://h/premium/%2e%2e/", false),
        ("http://h/premium/", "http://h/premium/a/%2e%2e/b.bin", true),
        ("http://h/premium/", "http://h/premium/%2e/x.bin", true),
        ("http://h/premium/", "http://h/premium/%2e%2e/premium/x.bin", true),
        ("http://h/premium/", "http://h/other/%2e%2e/premium/x.bin", true),
        ("http://h/premium/", "http://h/premium/x/%2e%2e/%2e%2e/other", false),
        ("http://h/premium/", "http://h/premium/...", false),
        ("http://h/premium/", "http://h/premium/..%20/other/x.bin", false),
        // Double encoding: a server that decodes twice reads dots or slashes.
        ("http://h/premium/", "http://h/premium/%252e%252e/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/%25252e/x.bin", false),
        ("http://h/premium/", "http://h/premium/%252f..%252fother", false),
        ("http://h/premium/", "http://h/premium/%25%32%65%25%32%65/other", false),
        // Encoded slashes and backslashes, literal backslashes.
        ("http://h/premium/", "http://h/premium/%2e%2e%2fother/x.bin", false),
        ("http://h/premium/", "http://h/premium/a%2Fb.bin", false),
        ("http://h/premium/", "http://h/premium%2fx.bin", false),
        ("http://h/premium/", "http://h/premium/..%5cother/x.bin", false),
        ("http://h/premium/", "http://h/premium/%5C..%5Cother%5Cx.bin", false),
        ("http://h/premium/", "http://h/premium/a\\b.bin", false),
        ("http://h/premium/", "http://h/premium\\..\\other\\x.bin", false),
        // `;params` are part of their segment; a dot segment with parameters never matches.
        ("http://h/premium/", "http://h/premium;v=1/x.bin", false),
        ("http://h/premium/", "http://h/premium/x.bin;v=1", true),
        ("http://h/premium/", "http://h/premium/..;/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/.;x/x.bin", false),
        ("http://h/premium/", "http://h/premium/%2e%2e;x/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/..%3B/other/x.bin", false),
        // Empty segments: merged, except where `..` would climb out of one.
        ("http://h/premium/", "http://h/premium//x.bin", true),
        ("http://h/premium/", "http://h//premium/x.bin", true),
        ("http://h/premium/", "http://h/premium//../other/x.bin", false),
        ("http://h/premium/", "http://h/premium/a//..//..//other/x.bin", false),
        // Unicode look-alikes of dots and slashes.
        ("http://h/premium/", "http://h/premium/\u{2024}\u{2024}/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/%E2%80%A4%E2%80%A4/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/\u{2025}/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/\u{FF0E}\u{FF0E}/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/\u{3002}\u{3002}/other/x.bin", false),
        ("http://h/premium/", "http://h/premium/\u{FF0F}..\u{FF0F}x.bin", false),
        ("http://h/premium/", "http://h/premium/a\u{2024}b.bin", true),
        // Control bytes and malformed escapes.
        ("http://h/premium/", "http://h/premium/%00/x.bin", false),
        ("http://h/premium/", "http://h/premium/a%0a/x.bin", false),
        // Unreserved characters and hex case are one spelling; other text compares exactly.
        ("http://h/~alice/", "http://h/%7ealice/x.bin", true),
        ("http://h/~alice/", "http://h/%7Ealice/x.bin", true),
        ("http://h/%7Ealice/", "http://h/~alice/x.bin", true),
        ("http://h/Premium/", "http://h/%50remium/x.bin", true),
        ("http://h/b%c3%bccher/", "http://h/b%C3%BCcher/x.bin", true),
        ("http://h/b%C3%BCcher/", "http://h/b\u{00FC}cher/x.bin", true),
        ("http://h/b%C3%BCcher/", "http://h/bu\u{0308}cher/x.bin", false),
        ("http://h/premium/", "http://h/PREMIUM/x.bin", false),
        ("http://h/premium/", "http://h/premium./x.bin", false),
        // Query and fragment are not the path.
        ("http://h/premium/", "http://h/premium/x.bin?next=/../../other", true),
        ("http://h/premium/", "http://h/premium#/../other", true),
        ("http://h/premium/", "http://h/other?/premium/", false),
        // A scope for the whole origin covers every spelling on it, odd ones included.
        ("http://h/", "http://h/premium/%2e%2e%2fother", true),
        ("http://h", "http://h/a%5Cb/..", true),
        // Hosts: IDNA (Unicode full stops are dots), case, one trailing dot; nothing else.
        ("https://cdn.example.com", "https://cdn\u{3002}example\u{3002}com/a", true),
        ("https://cdn.example.com", "https://cdn\u{FF0E}example\u{FF0E}com/a", true),
        ("https://cdn.example.com", "https://cdn\u{2024}example\u{2024}com/a", false),
        ("https://cdn.example.com", "https://cdn%2eexample.com/a", false),
        ("https://cdn.example.com", "https://cdn.example.com../a", false),
        ("https://bücher.example", "https://B\u{00DC}CHER.EXAMPLE./a", true),
        ("https://xn--bcher-kva.example", "https://XN--BCHER-KVA.example/a", true),
        ("https://bücher.example", "https://bu\u{0308}cher.example/a", true),
        ("http://127.0.0.1", "http://0x7f.0.0.1/a", false),
        ("http://127.0.0.1", "http://2130706433/a", false),
        ("http://[::1]", "http://[0:0::1]/a", false),
        ("http://[::1]:8080", "http://[::1]:8080/a", true),
        // Ports: explicit default ports are the default; any other port is another origin.
        ("http://example.com", "http://example.com:080/a", true),
        ("https://example.com:443/", "https://example.com/a", true),
        ("http://example.com", "http://example.com:443/a", false),
        ("https://example.com", "https://example.com:80/a", false),
        // Userinfo names an account, not an origin; a backslash in it never matches.
        ("http://example.com", "http://user@example.com/a", true),
        ("http://example.com", "http://user:secret@example.com/a", true),
        ("http://example.com", "http://example.com:x@evil.net/a", false),
        ("http://example.com", "http://evil.net\\@example.com/a", false),
        ("http://example.com", "http://evil.net%5C@example.com/a", false),
    ])
    func normalizesBeforeComparing(match: String, request: String, expected: Bool) throws {
        // Foundation refuses some spellings outright: such a URL is covered by nothing.
        let covered = URL(string: request).map { try! scope(match).contains($0) } ?? false
        #expect(covered == expected, "\(match) covering \(request)")
    }

    @Test(arguments: ["http://h/a%2Fb/", "http://h/%2e%2e;x/", "http://h/a/%252e/", "http://h/a//../b/"])
    func aScopeSpelledAmbiguouslyIsNotAScope(text: String) {
        #expect(URLScope(string: text) == nil)
    }

    /// Random paths built from risky pieces: whenever a scope for `/premium` covers one, every
    /// way a server may read it (decoding escapes once or twice, merging slashes or not,
    /// dropping `;params`, taking `\` for `/`, folding Unicode look-alikes) stays under
    /// `/premium`. Runs on a thread of its own; the seed is printed, and `URLSCOPE_SEED` replays it.
    @Test func noCoveredSpellingLeavesThePathForAnyServer() async throws {
        let seed = ProcessInfo.processInfo.environment["URLSCOPE_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("URLScopeTests fuzz seed: \(seed) (replay with URLSCOPE_SEED=\(seed))")
        let result = try await offThePool {
            var fuzz = ScopeFuzz(seed: seed)
            return fuzz.run(iterations: 30_000)
        }
        #expect(result.escapes.isEmpty, "seed \(seed): covered, but a server reads it outside /premium: \(Array(result.escapes.prefix(5)))")
        #expect(result.covered > 1_000, "seed \(seed): too few covered paths (\(result.covered)) to mean anything")
        #expect(result.refused > 1_000, "seed \(seed): too few refused paths (\(result.refused))")
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

/// The property test behind ``URLScopeTests/noCoveredSpellingLeavesThePathForAnyServer()``: a
/// seeded generator of paths from risky pieces, and servers' ways of reading a path written
/// independently of ``URLScope``.
struct ScopeFuzz {
    var generator: SplitMix64
    let scope = URLScope(string: "http://h/premium")!

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    static let pieces = [
        "premium", "premium", "premium", "other", "a", "x.bin", "", ".", "..", "%2e", "%2E", "%2e%2e", ".%2e", "%2E.",
        "%252e", "%252e%252e", "%2f", "%2F", "%5c", "%5C", "\\", ";x=1", "..;", ".;a", "%3b", "%00", "%25", "%7e", "~",
        "%41", "...", ". ", "%20", "\u{2024}", "\u{2025}", "%E2%80%A4", "\u{FF0E}", "%EF%BC%8E", "\u{3002}", "\u{FF0F}",
        "%EF%BC%8F", "\u{FF3C}", "premium%2f..", "..%2f", "%2e%2e%5c", "%25%32%65", "%2532", "%65",
    ]

    mutating func randomPath() -> String {
        // Half start inside the scope, so that many are covered and their tails are what is tested.
        var path = Bool.random(using: &generator) ? "/premium" : ""
        for _ in 0..<Int.random(in: 1...7, using: &generator) {
            path += "/" + Self.pieces.randomElement(using: &generator)!
            if Int.random(in: 0..<5, using: &generator) == 0 { path += Self.pieces.randomElement(using: &generator)! }
        }
        return path
    }

    struct Result: Sendable {
        var covered = 0
        var refused = 0
        var escapes: [String] = []
    }

    mutating func run(iterations: Int) -> Result {
        var result = Result()
        for _ in 0..<iterations {
            let written = randomPath()
            guard let url = URL(string: "http://h" + written) else { continue }
            guard scope.contains(url) else { result.refused += 1; continue }
            result.covered += 1
            let sent = url.path(percentEncoded: true)
            // Empty segments name no folder: `//premium` is `/premium` on disk, merged or not.
            for reading in ServerReading.allCases where !reading.segments(of: sent).filter({ !$0.isEmpty }).starts(with: ["premium"]) {
                result.escapes.append("\(written) (\(reading): \(reading.segments(of: sent).joined(separator: "/")))")
            }
        }
        return result
    }
}

/// Ways servers turn a request path into a file path, each decoding percent-escapes and
/// resolving dot segments; `segments(of:)` gives the resolved segments.
enum ServerReading: CaseIterable, CustomStringConvertible {
    /// nginx: decode once, merge `//`, resolve dots.
    case decodeMergeResolve
    /// RFC 3986 §5.2.4 on the decoded path: empty segments kept.
    case decodeResolve
    /// Tomcat: drop `;params` from each segment, then decode and resolve.
    case dropParameters
    /// IIS: decode, `\` is `/`, Unicode compatibility forms folded (U+FF0E is `.`).
    case windows
    /// A framework that decodes twice.
    case decodeTwice

    var description: String {
        switch self {
        case .decodeMergeResolve: "nginx"
        case .decodeResolve: "RFC 3986"
        case .dropParameters: "Tomcat"
        case .windows: "IIS"
        case .decodeTwice: "decoding twice"
        }
    }

    func segments(of path: String) -> [String] {
        switch self {
        case .decodeMergeResolve: Self.resolve(Self.decode(path).split(separator: "/").map(String.init))
        case .decodeResolve: Self.resolve(Self.decode(path).components(separatedBy: "/").dropFirst().map { $0 })
        case .dropParameters:
            Self.resolve(path.components(separatedBy: "/").dropFirst().map { Self.decode(String($0.prefix { $0 != ";" })) })
        case .windows:
            Self.resolve(Self.decode(path).precomposedStringWithCompatibilityMapping
                .replacingOccurrences(of: "\u{3002}", with: ".").replacingOccurrences(of: "\\", with: "/")
                .split(separator: "/").map { String($0).trimmingTrailing(" .", keepingDotSegments: true) })
        case .decodeTwice: Self.resolve(Self.decode(Self.decode(path)).split(separator: "/").map(String.init))
        }
    }

    /// Every `%XX` decoded (invalid UTF-8 replaced), other text as is.
    static func decode(_ text: String) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), let end = utf8.index(index, offsetBy: 3, limitedBy: utf8.endIndex),
               let value = UInt8(String(decoding: utf8[utf8.index(after: index)..<end], as: UTF8.self), radix: 16) {
                bytes.append(value)
                index = end
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `.` and `..` segments resolved; `..` at the root stays at the root.
    static func resolve(_ segments: [String]) -> [String] {
        var output: [String] = []
        for segment in segments {
            switch segment {
            case ".": continue
            case "..": if !output.isEmpty { output.removeLast() }
            default: output.append(segment)
            }
        }
        return output
    }
}

extension String {
    /// Windows drops trailing dots and spaces from a file name (but `.` and `..` stay).
    func trimmingTrailing(_ characters: String, keepingDotSegments: Bool) -> String {
        if keepingDotSegments, self == "." || self == ".." { return self }
        var text = self
        while let last = text.last, characters.contains(last) { text.removeLast() }
        return text.isEmpty && !isEmpty ? "." : text
    }
}
