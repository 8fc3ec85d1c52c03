import Foundation
import Paperboy
import PaperboyDaemon
import PaperboyFraming
import Testing

/// docs/Daemon.md's protocol examples as a contract: each marked example decodes with the type
/// the daemon (requests) or `PaperboyClient` (replies, events, challenges) decodes it with, shows
/// only fields that type reads, and every frame kind and event has one.
@Suite("Daemon.md's protocol examples")
struct DaemonDocExamplesTests {
    /// One ```` ```json ```` block after a `<!-- example: … -->` line.
    struct Example: CustomStringConvertible {
        var marker: String
        var line: Int
        var json: String
        var description: String { "docs/Daemon.md:\(line) <!-- example: \(marker) -->" }
    }

    static let docURL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/Daemon.md").standardized
    static let daemonSources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/PaperboyDaemon").standardized

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

    /// Decodes `json` as a frame of `kind` through the door and the decoder the receiver uses,
    /// and encodes the result again (to see which fields the type reads).
    static func roundTrip<Message: Codable>(_ type: Message.Type, kind: String, request: Bool, _ json: String) throws -> (Message, Data) {
        let frame = Frame(kind: kind, payload: Data(json.utf8))
        let checked = request ? try DaemonProtocol.request(frame) : try DaemonProtocol.reply(frame)
        let message = try DaemonProtocol.decode(type, checked)
        return (message, try DaemonProtocol.encoder.encode(message))
    }

    /// The request kinds and the type the daemon decodes each with (`DaemonServer.answer`).
    static func decodeRequest(_ kind: String, _ json: String) throws -> Data? {
        func trip<Message: Codable>(_ type: Message.Type) throws -> Data {
            let (_, data) = try roundTrip(type, kind: kind, request: true, json)
            return data
        }
        typealias Kind = DaemonProtocol.Kind
        switch kind {
        case Kind.hello: return try trip(ClientHello.self)
        case Kind.addIssue: return try trip(AddIssueRequest.self)
        case Kind.addAsset: return try trip(AddAssetRequest.self)
        case Kind.download, Kind.resume, Kind.pause, Kind.cancel, Kind.ack: return try trip(AssetCommand.self)
        case Kind.status: return try trip(StatusRequest.self)
        case Kind.subscribe, Kind.reload: return try trip(PlainRequest.self)
        case Kind.shelf: return try trip(ShelfRequest.self)
        case Kind.assets: return try trip(AssetsRequest.self)
        case Kind.read: return try trip(ReadRequest.self)
        case Kind.purge: return try trip(PurgeRequest.self)
        case Kind.notify: return try trip(NotifyRequest.self)
        case Kind.answer:
            let (answer, data) = try roundTrip(AnswerRequest.self, kind: kind, request: true, json)
            _ = try answer.authDisposition()
            return data
        default: return nil
        }
    }

    /// The `OK` of each request kind and the type `PaperboyClient` decodes it with.
    static func decodeOK(answering kind: String, _ json: String) throws -> Data? {
        func trip<Message: Codable>(_ type: Message.Type) throws -> Data {
            let (_, data) = try roundTrip(type, kind: DaemonProtocol.Kind.ok, request: false, json)
            return data
        }
        typealias Kind = DaemonProtocol.Kind
        switch kind {
        case Kind.shelf: return try trip(ShelfReply.self)
        case Kind.assets: return try trip(AssetsReply.self)
        case Kind.read, Kind.purge: return try trip(LibraryChangeReply.self)
        case Kind.notify: return try trip(NotifyReply.self)
        case Kind.addIssue, Kind.addAsset, Kind.download, Kind.resume, Kind.pause, Kind.cancel, Kind.ack, Kind.status,
             Kind.subscribe, Kind.reload, Kind.answer:
            return try trip(OKReply.self)
        default: return nil
        }
    }

    /// Decodes one example; `nil` when its marker names nothing the protocol has.
    static func decode(_ example: Example) throws -> Data? {
        let words = example.marker.split(separator: " ").map(String.init)
        switch (words.first, words.count) {
        case (DaemonProtocol.Kind.hello, 2) where words[1] == "reply":
            return try roundTrip(DaemonHello.self, kind: DaemonProtocol.Kind.hello, request: false, example.json).1
        case (DaemonProtocol.Kind.error, 1):
            return try roundTrip(WireError.self, kind: DaemonProtocol.Kind.error, request: false, example.json).1
        case (DaemonProtocol.Kind.challenge, 1):
            return try roundTrip(ChallengeMessage.self, kind: DaemonProtocol.Kind.challenge, request: false, example.json).1
        case (DaemonProtocol.Kind.event, 2):
            let (event, data) = try roundTrip(EventMessage.self, kind: DaemonProtocol.Kind.event, request: false, example.json)
            #expect(event.event == words[1], "\(example): the payload's event is '\(event.event)'")
            return data
        case (DaemonProtocol.Kind.ok, 2):
            return try decodeOK(answering: words[1], example.json)
        case (let kind?, 1):
            return try decodeRequest(kind, example.json)
        default:
            return nil
        }
    }

    /// The key paths of `shown` missing from `read` (objects by key, arrays element by element;
    /// an app's own JSON is read whole).
    static func unread(_ shown: Any, _ read: Any?, at path: String) -> [String] {
        if let object = shown as? [String: Any] {
            guard let readObject = read as? [String: Any] else { return [path] }
            return object.keys.sorted().flatMap { key -> [String] in
                let here = path.isEmpty ? key : "\(path).\(key)"
                guard let value = readObject[key] else { return [here] }
                return unread(object[key] as Any, value, at: here)
            }
        }
        if let array = shown as? [Any] {
            guard let readArray = read as? [Any], readArray.count == array.count else { return [path] }
            return zip(array, readArray).enumerated().flatMap { unread($1.0, $1.1, at: "\(path)[\($0)]") }
        }
        return read == nil ? [path] : []
    }

    @Test func everyExampleDecodesWithTheTypeItsReceiverUses() throws {
        let examples = try Self.examples()
        #expect(examples.count >= 40, "found \(examples.count) examples")
        for example in examples {
            #expect(!example.json.isEmpty, "\(example): no ```json block right after the marker")
            do {
                guard let read = try Self.decode(example) else {
                    Issue.record("\(example): the marker names no frame kind the protocol has")
                    continue
                }
                let shown = try JSONSerialization.jsonObject(with: Data(example.json.utf8))
                let again = try JSONSerialization.jsonObject(with: read)
                let missing = Self.unread(shown, again, at: "")
                #expect(missing.isEmpty, "\(example): fields the receiver does not read: \(missing)")
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
        let sources = try FileManager.default.contentsOfDirectory(at: Self.daemonSources, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }
            .map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
        let kinds = Set(Self.captures(#"public static let \w+ = "([A-Z]+)""#, in: sources))
        let events = Set(Self.captures(#"EventMessage\(event: "([a-z-]+)""#, in: sources))
        #expect(kinds.count >= 20 && kinds.contains("ANSWER") && kinds.contains("PURGE"), "kinds read from the sources: \(kinds.sorted())")
        #expect(events == ["progress", "resumed", "finished", "failed", "state", "issue-available", "badge"], "\(events.sorted())")

        let markers = Set(try Self.examples().map(\.marker))
        let replies: Set = [DaemonProtocol.Kind.ok, DaemonProtocol.Kind.error, DaemonProtocol.Kind.event, DaemonProtocol.Kind.challenge]
        for kind in kinds.subtracting(replies) {
            #expect(markers.contains(kind), "no example of \(kind)")
            if kind == DaemonProtocol.Kind.hello {
                #expect(markers.contains("HELLO reply"), "no example of the daemon's HELLO")
            } else {
                #expect([DaemonProtocol.Kind.download, DaemonProtocol.Kind.resume, DaemonProtocol.Kind.cancel].contains(kind)
                            || markers.contains("OK \(kind)"), "no example of the OK to \(kind)")
            }
        }
        for kind in [DaemonProtocol.Kind.error, DaemonProtocol.Kind.challenge] {
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
