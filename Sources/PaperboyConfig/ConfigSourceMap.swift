/// The line each key, table and array element of a configuration file was written on.
///
/// Paths are dotted and indexed like ``ConfigError/key``: `scheduler.max_concurrent`,
/// `issues[2]` (the `[[issues]]` header), `issues[2].assets[0].sha256`,
/// `bandwidth.schedule[1]`.
///
/// Paths are kept as 64-bit digests, not strings: a configuration of 100,000 assets has over
/// 300,000 paths (`issues[12].assets[345].url`), 24 MiB as strings, 7 MiB as digests. Two paths
/// sharing a digest (odds about 2⁻⁶⁴ per pair) would only give one's line to the other in a message.
public struct ConfigSourceMap: Sendable, Equatable {
    private var lines: [UInt64: Int32]

    /// Creates a map from key paths to 1-based lines.
    public init(lines: [String: Int] = [:]) {
        self.lines = Dictionary(lines.map { (Self.digest($0.key), Int32(clamping: $0.value)) }, uniquingKeysWith: { first, _ in first })
    }

    /// Scans TOML text (already known to be valid) and records where every key starts.
    init(scanning text: String) {
        var text = text
        // Scanned in place: a copy of the bytes of a 100,000-asset file is 7.6 MiB more.
        lines = text.withUTF8 { bytes in
            var scanner = SourceScanner(bytes: bytes)
            scanner.scan()
            return scanner.lines
        }
    }

    /// FNV-1a over the path's UTF-8: stable, and cheap next to the scan.
    static func digest(_ path: some StringProtocol) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The line of a key path, or of its nearest written ancestor (an inline table, an array,
    /// a table header) when the path itself has no line of its own.
    public func line(for keyPath: String) -> Int? {
        var path = Substring(keyPath)
        while !path.isEmpty {
            if let line = lines[Self.digest(path)] { return Int(line) }
            if path.last == "]", let open = path.lastIndex(of: "[") {
                path = path[..<open]
            } else if let dot = path.lastIndex(of: ".") {
                path = path[..<dot]
            } else {
                return nil
            }
        }
        return nil
    }

    /// The line of exactly this key path, without falling back to an ancestor.
    public func exactLine(for keyPath: String) -> Int? {
        lines[Self.digest(keyPath)].map(Int.init)
    }
}

/// A lenient TOML reader that only tracks positions; toml++ has already validated the text.
struct SourceScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var line = 1
    private(set) var lines: [UInt64: Int32] = [:]
    private var arrayCounts: [String: Int] = [:]
    private var currentTable = ""

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func peek(_ offset: Int) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    mutating func scan() {
        while index < bytes.count {
            skipTrivia(newlines: true)
            guard let byte = current else { break }
            if byte == UInt8(ascii: "[") {
                scanHeader()
            } else {
                scanKeyValue(in: currentTable)
            }
            skipToEndOfLine()
        }
    }

    private mutating func record(_ path: String, line: Int) {
        let key = ConfigSourceMap.digest(path)
        if lines[key] == nil { lines[key] = Int32(clamping: line) }
    }

    private static func join(_ base: String, _ key: String) -> String {
        base.isEmpty ? key : base + "." + key
    }

    private mutating func scanHeader() {
        let isArray = peek(1) == UInt8(ascii: "[")
        index += isArray ? 2 : 1
        let segments = scanKey()
        skipTrivia(newlines: false)
        index += isArray ? 2 : 1
        var path = ""
        for (position, segment) in segments.enumerated() {
            path = Self.join(path, segment)
            let isLast = position == segments.count - 1
            if isLast && isArray {
                record(path, line: line)
                let count = arrayCounts[path, default: 0]
                arrayCounts[path] = count + 1
                path += "[\(count)]"
            } else if let count = arrayCounts[path] {
                path += "[\(count - 1)]"
            }
            if isLast { record(path, line: line) }
        }
        currentTable = path
    }

    private mutating func scanKeyValue(in table: String) {
        let keyLine = line
        let segments = scanKey()
        guard !segments.isEmpty else {
            index += 1
            return
        }
        var path = table
        for segment in segments {
            path = Self.join(path, segment)
            record(path, line: keyLine)
        }
        skipTrivia(newlines: false)
        if current == UInt8(ascii: "=") { index += 1 }
        skipTrivia(newlines: false)
        scanValue(path: path)
    }

    /// Reads a dotted key of bare, "basic" and 'literal' parts.
    private mutating func scanKey() -> [String] {
        var segments: [String] = []
        while true {
            skipTrivia(newlines: false)
            guard let byte = current else { break }
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                segments.append(scanQuotedKey(quote: byte))
            } else if Self.isBareKeyByte(byte) {
                let start = index
                while let next = current, Self.isBareKeyByte(next) { index += 1 }
                segments.append(String(decoding: bytes[start..<index], as: UTF8.self))
            } else {
                break
            }
            skipTrivia(newlines: false)
            guard current == UInt8(ascii: ".") else { break }
            index += 1
        }
        return segments
    }

    private mutating func scanQuotedKey(quote: UInt8) -> String {
        index += 1
        var raw: [UInt8] = []
        while let byte = current, byte != quote, byte != UInt8(ascii: "\n") {
            if quote == UInt8(ascii: "\""), byte == UInt8(ascii: "\\"), let escaped = peek(1) {
                raw.append(escaped)
                index += 2
                continue
            }
            raw.append(byte)
            index += 1
        }
        index += 1
        return String(decoding: raw, as: UTF8.self)
    }

    private static func isBareKeyByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    private mutating func scanValue(path: String) {
        guard let byte = current else { return }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            scanString(quote: byte)
        case UInt8(ascii: "["):
            index += 1
            var element = 0
            while true {
                skipTrivia(newlines: true)
                guard let next = current else { return }
                if next == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                let elementPath = path + "[\(element)]"
                record(elementPath, line: line)
                scanValue(path: elementPath)
                skipTrivia(newlines: true)
                if current == UInt8(ascii: ",") {
                    index += 1
                    element += 1
                } else if current != UInt8(ascii: "]") {
                    return
                }
            }
        case UInt8(ascii: "{"):
            index += 1
            while true {
                skipTrivia(newlines: true)
                guard let next = current else { return }
                if next == UInt8(ascii: "}") {
                    index += 1
                    return
                }
                if next == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                let before = index
                scanKeyValue(in: path)
                if index == before { index += 1 }
            }
        default:
            // Numbers, booleans, dates and times end at a separator (a date-time may hold a space).
            while let next = current, ![
                UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"),
                UInt8(ascii: "#"), UInt8(ascii: "\n"), UInt8(ascii: "\r"),
            ].contains(next) {
                index += 1
            }
        }
    }

    private mutating func scanString(quote: UInt8) {
        let isMultiline = peek(1) == quote && peek(2) == quote
        index += isMultiline ? 3 : 1
        let escapes = quote == UInt8(ascii: "\"")
        while let byte = current {
            if escapes && byte == UInt8(ascii: "\\") {
                if peek(1) == UInt8(ascii: "\n") { line += 1 }
                index += 2
                continue
            }
            if byte == UInt8(ascii: "\n") {
                if !isMultiline { return }
                line += 1
            }
            if byte == quote {
                if !isMultiline {
                    index += 1
                    return
                }
                if peek(1) == quote && peek(2) == quote {
                    index += 3
                    // Up to two quotes may sit right before the closing delimiter.
                    var extra = 0
                    while extra < 2, current == quote {
                        index += 1
                        extra += 1
                    }
                    return
                }
            }
            index += 1
        }
    }

    /// Skips spaces, tabs, comments and (optionally) newlines.
    private mutating func skipTrivia(newlines: Bool) {
        while let byte = current {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                index += 1
            } else if byte == UInt8(ascii: "#") {
                while let next = current, next != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "\n") && newlines {
                line += 1
                index += 1
            } else {
                return
            }
        }
    }

    private mutating func skipToEndOfLine() {
        while let byte = current, byte != UInt8(ascii: "\n") { index += 1 }
        if current == UInt8(ascii: "\n") {
            line += 1
            index += 1
        }
    }
}
