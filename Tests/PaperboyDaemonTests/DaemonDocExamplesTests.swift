import Foundation
import Paperboy
import PaperboyWire
import PaperboyDaemon
import PaperboyFraming
import Testing

/// docs/Daemon.md's protocol examples as a contract: each marked example decodes as the typed
/// message of PaperboyWire its receiver reads (``Request``, the ``Reply`` of its request's kind,
/// ``Event``…), encodes back to the same JSON (a request may leave defaults out), and every frame
/// kind and event has one.
@Suite("Daemon.md's protocol examples", .timeLimit(.minutes(1)))
struct DaemonDocExamplesTests {
    /// One ```` ```json ```` block after a `<!-- example: … -->` line.
    struct Example: CustomStringConvertible {
        var marker: String
        var line: Int
        var json: String
        var description: String { "docs/Daemon.md:\(line) <!-- example: \(marker) -->" }
    }

    static let docURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/Daemon.md").standardized
    static let wireSources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/PaperboyWire").standardized

    static func examples() throws -> [Example] {
        let lines = try String(contentsOf: docURL, encoding: .utf8).components(separatedBy: "\n")
        var examples: [Example] = []
        var index = 0
        while index < lines.count {
            let line = lines[index].trimmingCharacters(in: .whitespaces)
            index += 1
            guard line.hasPrefix("<!-- example:"), line.hasSuffix("-->") else { continue }
            let marker = line.dropFirst("<!-- example:".count).dropLast("-->".count).trimmingCharacters(in: .whitespaces)
            let markerLine = index
            guard index < lines.count, lines[index] == "```json" else {
                examples.append(Example(marker: marker, line: markerLine, json: ""))
                continue
            }
            var body: [String] = []
            index += 1
            while index < lines.count, lines[index] != "```" {
                body.append(lines[index])
                index += 1
            }
            examples.append(Example(marker: marker, line: markerLine, json: body.joined(separator: "\n")))
        }
        return examples
    }

    /// `json` as a frame of `kind`, through the door its receiver checks it at.
    static func checked(_ kind: String, request: Bool, _ json: String) throws -> CheckedFrame {
        let frame = Frame(kind: kind, payload: Data(json.utf8))
        return request ? try DaemonProtocol.request(frame) : try DaemonProtocol.reply(frame)
    }

    /// Decodes one example with the typed value its receiver decodes it with (a request as
    /// ``Request``, an `OK` as the ``Reply`` of its request's kind, an event as ``Event``), and
    /// encodes that value again; `nil` when its marker names nothing the protocol has. `isRequest`
    /// says whether it goes client → daemon.
    static func decode(_ example: Example) throws -> (encoded: Data, isRequest: Bool)? {
        let words = example.marker.split(separator: " ").map(String.init)
        let encoder = DaemonProtocol.encoder
        switch (words.first, words.count) {
        case (DaemonProtocol.Kind.hello, 2) where words[1] == "reply":
            let frame = try checked(DaemonProtocol.Kind.hello, request: false, example.json)
            return (try encoder.encode(DaemonProtocol.decode(DaemonHello.self, frame)), false)
        case (DaemonProtocol.Kind.error, 1):
            let frame = try checked(DaemonProtocol.Kind.error, request: false, example.json)
            return (try encoder.encode(DaemonProtocol.decode(WireError.self, frame)), false)
        case (DaemonProtocol.Kind.challenge, 1):
            let frame = try checked(DaemonProtocol.Kind.challenge, request: false, example.json)
            return (try encoder.encode(DaemonProtocol.decode(ChallengeMessage.self, frame)), false)
        case (DaemonProtocol.Kind.resuming, 1):
            let frame = try checked(DaemonProtocol.Kind.resuming, request: false, example.json)
            return (try encoder.encode(DaemonProtocol.decode(ResumingMessage.self, frame)), false)
        case (DaemonProtocol.Kind.event, 2):
            let event = try DaemonProtocol.decode(Event.self, try checked(DaemonProtocol.Kind.event, request: false, example.json))
            #expect(event.name == words[1], "\(example): the payload's event is '\(event.name)'")
            return (try encoder.encode(event), false)
        case (DaemonProtocol.Kind.ok, 2):
            guard Reply.type(answering: words[1]) != nil else { return nil }
            let reply = try Reply.decode(answering: words[1], try checked(DaemonProtocol.Kind.ok, request: false, example.json))
            return (try encoder.encode(reply.payload), false)
        case (let kind?, 1):
            let request: Request
            do {
                request = try Request(try checked(kind, request: true, example.json))
            } catch let error as WireError where error.code == DaemonProtocol.ErrorCode.unknownKind {
                return nil
            }
            if case .answer(let answer) = request { _ = try answer.authDisposition() }
            if case .resumeWith(let answer) = request { _ = try answer.request.validated() }
            #expect(request.kind == kind)
            return (try encoder.encode(request.payload), true)
        default:
            return nil
        }
    }

    /// Where `encoded` differs from `shown` (objects by key, arrays element by element, numbers
    /// by value); with `allowingDefaults`, members `encoded` adds (defaults a receiver fills in) are not differences.
    static func differences(_ shown: Any, _ encoded: Any?, allowingDefaults: Bool, at path: String) -> [String] {
        if let object = shown as? [String: Any] {
            guard let other = encoded as? [String: Any] else { return [path.isEmpty ? "(top)" : path] }
            let added = allowingDefaults ? [] : Set(other.keys).subtracting(object.keys).sorted().map { path.isEmpty ? "+\($0)" : "+\(path).\($0)" }
            return added + object.keys.sorted().flatMap { key in
                differences(object[key] as Any, other[key], allowingDefaults: allowingDefaults, at: path.isEmpty ? key : "\(path).\(key)")
            }
        }
        if let array = shown as? [Any] {
            guard var other = encoded as? [Any], other.count == array.count else { return [path] }
            // A set, sent in any order (docs/Daemon.md says so).
            if path.hasSuffix("allowed_kinds"), let shownKinds = array as? [String], let kinds = other as? [String] {
                other = kinds.sorted { (shownKinds.firstIndex(of: $0) ?? 0) < (shownKinds.firstIndex(of: $1) ?? 0) }
            }
            return zip(array, other).enumerated().flatMap {
                differences($1.0, $1.1, allowingDefaults: allowingDefaults, at: "\(path)[\($0)]")
            }
        }
        guard let encoded else { return [path] }
        return (shown as? NSObject)?.isEqual(encoded) == true ? [] : ["\(path): \(shown) became \(encoded)"]
    }

    @Test func everyExampleDecodesAsItsTypedMessageAndEncodesBackToTheSameJSON() throws {
        let examples = try Self.examples()
        #expect(examples.count >= 40, "found \(examples.count) examples")
        for example in examples {
            #expect(!example.json.isEmpty, "\(example): no ```json block right after the marker")
            do {
                guard let (encoded, isRequest) = try Self.decode(example) else {
                    Issue.record("\(example): the marker names no frame kind the protocol has")
                    continue
                }
                let shown = try JSONSerialization.jsonObject(with: Data(example.json.utf8))
                let again = try JSONSerialization.jsonObject(with: encoded)
                // A request may leave out what has a default (the daemon's answers show it);
                // what the daemon sends is shown whole.
                let different = Self.differences(shown, again, allowingDefaults: isRequest, at: "")
                #expect(different.isEmpty, "\(example): encoded again, it differs: \(different)")
            } catch let error as WireError {
                Issue.record("\(example): \(error.code): \(error.message)")
            } catch {
                Issue.record("\(example): \(error)")
            }
        }
    }

    /// Every frame kind (the `Kind` constants in Sources/PaperboyDaemon) and every event the
    /// daemon sends has an example; a request kind has one of its `OK` too.
    @Test func everyKindAndEventHasAnExample() throws {
        let sources = try FileManager.default.contentsOfDirectory(at: Self.wireSources, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }
            .map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
        let kinds = Set(Self.captures(#"public static let \w+ = "([A-Z]+)""#, in: sources))
        let events = Set(Event.names)
        #expect(kinds.count >= 20 && kinds.contains("ANSWER") && kinds.contains("PURGE"), "kinds read from the sources: \(kinds.sorted())")
        #expect(events == ["progress", "resumed", "finished", "failed", "state", "issue-available", "badge"], "\(events.sorted())")

        let markers = Set(try Self.examples().map(\.marker))
        let replies: Set = [DaemonProtocol.Kind.ok, DaemonProtocol.Kind.error, DaemonProtocol.Kind.event, DaemonProtocol.Kind.challenge,
                            DaemonProtocol.Kind.resuming]
        for kind in kinds.subtracting(replies) {
            #expect(markers.contains(kind), "no example of \(kind)")
            if kind == DaemonProtocol.Kind.hello {
                #expect(markers.contains("HELLO reply"), "no example of the daemon's HELLO")
            } else {
                #expect([DaemonProtocol.Kind.download, DaemonProtocol.Kind.resume, DaemonProtocol.Kind.cancel].contains(kind)
                            || markers.contains("OK \(kind)"), "no example of the OK to \(kind)")
            }
        }
        for kind in [DaemonProtocol.Kind.error, DaemonProtocol.Kind.challenge, DaemonProtocol.Kind.resuming] {
            #expect(markers.contains(kind), "no example of \(kind)")
        }
        for event in events {
            #expect(markers.contains("EVENT \(event)"), "no example of the event \(event)")
        }
    }

    static func captures(_ pattern: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }
}
