import Foundation
import Testing
@testable import Paperboy

@Suite("Stored request JSON")
struct RequestJSONTests {
    /// What the request column held before the hand-written form: `JSONEncoder`, sorted keys.
    static func encoderText(_ request: AssetRequest) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(request), as: UTF8.self)
    }

    static let samples: [AssetRequest] = [
        AssetRequest(url: URL(string: "https://cdn.example.com/a.pdf")!),
        AssetRequest(url: URL(string: "http://h:8080/a%20b/c?x=1&y=%2F#frag")!, headers: ["X-B": "2", "A": "1", "b": "é😀"],
                     sha256: String(repeating: "Ab", count: 32), priority: -3, destinationPath: "dir/\"quoted\"\\back.pdf",
                     options: ["user": "me", "known_hosts": "/k"], maxBytesPerSecond: 1 << 40, unpack: .zip, role: .cover),
        AssetRequest(url: URL(fileURLWithPath: "/tmp/x y/z"), destinationPath: "ctl\u{1}\u{1f}\u{7f}\t\n\r\u{8}\u{c}\u{2028}.bin",
                     options: ["": "", "/": "\\"]),
        AssetRequest(url: URL(string: "sftp://u@h/~/in/f")!, priority: Int.max),
    ]

    @Test(arguments: samples)
    func writesWhatJSONEncoderWrites(request: AssetRequest) throws {
        let text = try #require(RequestJSON.text(request))
        #expect(text == (try Self.encoderText(request)))
        let read = try JSONDecoder().decode(AssetRequest.self, from: Data(text.utf8))
        #expect(read == request)
    }

    @Test func keysAreSortedByTheirBytes() throws {
        // "é" decomposed sorts before "f" by normalized form, after it by bytes (as the encoder does).
        let request = AssetRequest(url: URL(string: "https://h/a")!, options: ["e\u{301}": "1", "f": "2", "\u{e9}x": "3"])
        #expect(RequestJSON.text(request) == (try Self.encoderText(request)))
    }

    @Test func networkOverridesFallBackToTheEncoder() throws {
        var request = AssetRequest(url: URL(string: "https://h/a")!)
        request.network = NetworkPolicyOverride(allowsExpensive: false)
        #expect(RequestJSON.text(request) == nil)
        let stored = try StoredRequest(request).json()
        #expect(try JSONDecoder().decode(AssetRequest.self, from: Data(stored.utf8)) == request)
    }

    @Test func randomStringsRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "😀", "\u{2028}", "\u{301}"]
        for _ in 0..<300 {
            let text = String(String.UnicodeScalarView((0..<Int.random(in: 0...12, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }))
            let request = AssetRequest(url: URL(string: "https://h/a")!, headers: [text: text], destinationPath: text.isEmpty ? nil : text)
            let written = try #require(RequestJSON.text(request))
            #expect(written == (try Self.encoderText(request)), "for \(text.debugDescription)")
        }
    }
}
