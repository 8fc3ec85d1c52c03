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

    // MARK: Reading by hand

    /// What `JSONDecoder` reads from `text` (nil when it refuses it).
    static func decoderRead(_ text: String) -> AssetRequest? {
        try? JSONDecoder().decode(AssetRequest.self, from: Data(text.utf8))
    }

    @Test(arguments: samples)
    func readsWhatJSONDecoderReads(request: AssetRequest) throws {
        for text in [try #require(RequestJSON.text(request)), try Self.encoderText(request)] {
            let read = try #require(RequestJSON.request(from: Data(text.utf8)), "not read by hand: \(text)")
            #expect(read == Self.decoderRead(text))
            #expect(read == request)
        }
    }

    @Test func readsRandomStringsAsJSONDecoderDoes() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "😀", "\u{2028}", "\u{301}", "\u{ffff}"]
        for _ in 0..<300 {
            let text = String(String.UnicodeScalarView((0..<Int.random(in: 0...12, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }))
            let request = AssetRequest(url: URL(string: "https://h/a")!, headers: [text: text], sha256: text.isEmpty ? nil : text,
                                       priority: Int.random(in: Int.min...Int.max, using: &generator),
                                       destinationPath: text.isEmpty ? nil : text, options: ["k" + text: text])
            let json = try #require(RequestJSON.text(request))
            let read = RequestJSON.request(from: Data(json.utf8))
            #expect(read != nil, "not read by hand: \(json)")
            #expect(read == Self.decoderRead(json), "for \(json)")
        }
    }

    @Test func readsEscapesOtherWritersUse() throws {
        // \u escapes (also a surrogate pair), spaces between tokens, keys in any order.
        let text = #" { "url" : "https:\/\/h\/a" , "destinationPath":"\u00e9\ud83d\ude00\u0041.bin", "priority": -7, "headers": {} } "#
        let read = try #require(RequestJSON.request(from: Data(text.utf8)))
        #expect(read == Self.decoderRead(text))
        #expect(read.destinationPath == "é😀A.bin")
        #expect(read.priority == -7)
        #expect(read.url.absoluteString == "https://h/a")
    }

    /// Text the hand reader leaves to `JSONDecoder`, which reads it or says what is wrong.
    static let leftToTheDecoder: [String] = [
        #"{"network":{"allowsExpensive":false},"url":"https:\/\/h\/a"}"#,    // a network override
        #"{"sha256":null,"url":"https:\/\/h\/a"}"#,                           // null
        #"{"future":1,"url":"https:\/\/h\/a"}"#,                              // a key this version does not know
        #"{"url":"https:\/\/h\/a","url":"https:\/\/h\/b"}"#,                  // a duplicate key
        #"{"priority":1.0,"url":"https:\/\/h\/a"}"#,                          // a float
        #"{"priority":1E2,"url":"https:\/\/h\/a"}"#,                          // an exponent
        #"{"priority":01,"url":"https:\/\/h\/a"}"#,                           // a leading zero
        #"{"priority":99999999999999999999,"url":"https:\/\/h\/a"}"#,         // too large
        #"{"destinationPath":"\ud800x","url":"https:\/\/h\/a"}"#,             // a lone surrogate
        #"{"destinationPath":"\q","url":"https:\/\/h\/a"}"#,                  // an unknown escape
        #"{"unpack":"rar","url":"https:\/\/h\/a"}"#,                          // an unknown format
        #"{"options":{"a":1},"url":"https:\/\/h\/a"}"#,                       // a number where a string belongs
        #"{"url":"https:\/\/h\/a"} x"#,                                       // text after the object
        #"{"url":"https:\/\/h\/a""#,                                         // cut short
        #"{"priority":3}"#,                                                    // no URL
        "{\"destinationPath\":\"a\u{1}b\",\"url\":\"https:\\/\\/h\\/a\"}",            // a raw control character
    ]

    @Test(arguments: leftToTheDecoder)
    func leavesAnythingElseToJSONDecoder(text: String) {
        #expect(RequestJSON.request(from: Data(text.utf8)) == nil)
        // The stored request still reads as the decoder reads it, or as unreadable.
        let stored = StoredRequest(json: Data(text.utf8))
        #expect(stored.value == Self.decoderRead(text) ?? AssetRequest(url: StoredRequest.unreadableURL))
    }

    @Test func leavesInvalidUTF8ToJSONDecoder() {
        var bytes = Array(#"{"destinationPath":"a"#.utf8)
        bytes += [0xC3, 0x28]
        bytes += Array(#"","url":"https:\/\/h\/a"}"#.utf8)
        #expect(RequestJSON.request(from: Data(bytes)) == nil)
    }
}
