import Foundation

/// The request column's JSON, written by hand: the same text as `JSONEncoder` with sorted keys,
/// at a fraction of the cost (adding 1,000 assets spent 8 ms in the encoder).
///
/// Requests with a network override fall back to the encoder (returns `nil`). Reading is by hand
/// too (``request(from:)``: `JSONDecoder` was 18 % of a sync with nothing to do, 8 µs a request),
/// for the text this type writes; anything else goes to `JSONDecoder`.
enum RequestJSON {
    static func text(_ request: AssetRequest) -> String? {
        guard request.network == nil else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(128 + request.url.absoluteString.utf8.count)
        var first = true
        func key(_ name: StaticString) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            out.append(contentsOf: "\":".utf8)
        }
        // Keys in sorted order, as `.sortedKeys` writes them.
        if let path = request.destinationPath { key("destinationPath"); appendString(path, to: &out) }
        key("headers"); appendObject(request.headers, to: &out)
        if let limit = request.maxBytesPerSecond { key("maxBytesPerSecond"); out.append(contentsOf: String(limit).utf8) }
        key("options"); appendObject(request.options, to: &out)
        key("priority"); out.append(contentsOf: String(request.priority).utf8)
        key("role"); appendString(request.role.rawValue, to: &out)
        if let sha256 = request.sha256 { key("sha256"); appendString(sha256, to: &out) }
        if let unpack = request.unpack { key("unpack"); appendString(unpack.rawValue, to: &out) }
        key("url"); appendString(request.url.absoluteString, to: &out)
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendObject(_ object: [String: String], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        // By UTF-8 bytes, as `JSONEncoder` sorts keys (String's `<` compares normalized forms).
        for (index, name) in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendString(name, to: &out)
            out.append(UInt8(ascii: ":"))
            appendString(object[name]!, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A JSON string literal, escaped as `JSONEncoder` does (`/` included, DEL and non-ASCII raw).
    static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case ..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: Reading

extension RequestJSON {
    /// The request in `json`, read without `JSONDecoder`, or `nil` when the text is not what
    /// ``text(_:)`` (or `JSONEncoder`) writes for a request without a network override: then
    /// `JSONDecoder` reads it and reports what is wrong. For that text it gives what
    /// `JSONDecoder` gives (tests compare both on random requests).
    static func request(from json: Data) -> AssetRequest? {
        json.withUnsafeBytes { bytes in
            var reader = Reader(bytes: bytes)
            return reader.request()
        }
    }

    /// A strict reader of one JSON object with string, integer and string-to-string object
    /// values; `nil` for anything else (`null`, floats, nested arrays, duplicate or unknown keys,
    /// invalid UTF-8 or escapes).
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func request() -> AssetRequest? {
            var url: URL?
            var headers: [String: String]?
            var sha256: String?
            var priority: Int?
            var destinationPath: String?
            var options: [String: String]?
            var maxBytesPerSecond: Int64?
            var unpack: UnpackFormat?
            var role: AssetRole?
            var seen = Set<String>()
            skipSpace()
            guard take(UInt8(ascii: "{")) else { return nil }
            skipSpace()
            if !take(UInt8(ascii: "}")) {
                repeat {
                    skipSpace()
                    guard let key = string() else { return nil }
                    guard seen.insert(key).inserted else { return nil }
                    skipSpace()
                    guard take(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    switch key {
                    case "url":
                        guard let text = string(), let parsed = URL(string: text) else { return nil }
                        url = parsed
                    case "headers":
                        guard let object = object() else { return nil }
                        headers = object
                    case "options":
                        guard let object = object() else { return nil }
                        options = object
                    case "sha256":
                        guard let text = string() else { return nil }
                        sha256 = text
                    case "destinationPath":
                        guard let text = string() else { return nil }
                        destinationPath = text
                    case "priority":
                        guard let number = integer(), let value = Int(exactly: number) else { return nil }
                        priority = value
                    case "maxBytesPerSecond":
                        guard let number = integer() else { return nil }
                        maxBytesPerSecond = number
                    case "unpack":
                        guard let text = string(), let value = UnpackFormat(rawValue: text) else { return nil }
                        unpack = value
                    case "role":
                        guard let text = string(), let value = AssetRole(rawValue: text) else { return nil }
                        role = value
                    default:
                        // `network`, and keys this version does not know: JSONDecoder decides.
                        return nil
                    }
                    skipSpace()
                } while take(UInt8(ascii: ","))
                guard take(UInt8(ascii: "}")) else { return nil }
            }
            skipSpace()
            guard index == bytes.count, let url else { return nil }
            var request = AssetRequest(
                url: url, headers: headers ?? [:], priority: priority ?? 0, destinationPath: destinationPath,
                options: options ?? [:], maxBytesPerSecond: maxBytesPerSecond, unpack: unpack, role: role ?? .content)
            // As stored (the initializer lowercases it; `init(from:)` does not).
            request.sha256 = sha256
            return request
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        /// `{"name":"value",…}` with string values only.
        private mutating func object() -> [String: String]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var object: [String: String] = [:]
            skipSpace()
            if take(UInt8(ascii: "}")) { return object }
            repeat {
                skipSpace()
                guard let name = string() else { return nil }
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                guard let value = string(), object.updateValue(value, forKey: name) == nil else { return nil }
                skipSpace()
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? object : nil
        }

        /// An integer without fraction or exponent that fits in 64 bits.
        private mutating func integer() -> Int64? {
            let start = index
            _ = take(UInt8(ascii: "-"))
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits, index - digits < 20 else { return nil }
            // A leading zero only alone, as JSON has it.
            if bytes[digits] == UInt8(ascii: "0"), index - digits > 1 { return nil }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] | 0x20 == UInt8(ascii: "e") { return nil }
            return Int64(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
        }

        /// A string literal: valid UTF-8, no raw control characters, the JSON escapes (a `\u`
        /// surrogate only as half of a pair).
        private mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            // The common case: no escapes, copied in one piece.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            var out = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(validating: out, as: UTF8.self)
                case ..<0x20:
                    return nil
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "u"):
                        guard var value = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(value) {
                            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(),
                                  (0xDC00..<0xE000).contains(low) else { return nil }
                            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00..<0xE000).contains(value) {
                            return nil
                        }
                        guard let scalar = Unicode.Scalar(value) else { return nil }
                        out.append(contentsOf: String(Character(scalar)).utf8)
                    default:
                        return nil
                    }
                default:
                    out.append(byte)
                }
            }
            return nil
        }

        private mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
    }
}
