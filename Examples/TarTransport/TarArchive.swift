#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Finds entries in an uncompressed tar archive (POSIX ustar, pax extended headers, GNU long
/// names) by reading only the 512-byte headers; entry data is read in place.
struct TarArchive {
    /// One regular file in the archive.
    struct Entry: Equatable {
        /// Where its bytes start in the archive file.
        var dataOffset: Int64
        /// Its size in bytes.
        var size: Int64
    }

    /// Why the archive cannot be read.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    private static let block = 512

    /// Scans the archive open at `fd` for the regular file named `name`.
    ///
    /// - Returns: the entry, or `nil` when there is no regular file of that name.
    /// - Throws: ``Malformed`` for a corrupt header; the errno text when a read fails.
    static func find(_ name: String, in fd: Int32) throws -> Entry? {
        let wanted = normalized(name)
        var header = [UInt8](repeating: 0, count: block)
        var position: Int64 = 0
        var longName: String?
        var paxSize: Int64?
        while true {
            guard try readFully(fd, into: &header, at: position) else { return nil }   // end of file
            if header.allSatisfy({ $0 == 0 }) { return nil }                                // end-of-archive marker
            guard checksumMatches(header) else {
                throw Malformed(description: "bad header checksum at byte \(position)")
            }
            let type = header[156]
            let size = try paxSize ?? number(header[124..<136], at: position)
            let dataOffset = position + Int64(block)
            position = dataOffset + (size + Int64(block - 1)) / Int64(block) * Int64(block)
            switch type {
            case UInt8(ascii: "x"):
                let records = try readData(fd, at: dataOffset, count: size)
                let fields = paxRecords(records)
                longName = fields["path"] ?? longName
                paxSize = fields["size"].flatMap { Int64($0) }
                continue
            case UInt8(ascii: "L"):
                longName = string(try readData(fd, at: dataOffset, count: size)[...])
                continue
            case UInt8(ascii: "g"), UInt8(ascii: "K"):
                continue
            default:
                break
            }
            var entryName = longName ?? string(header[0..<100])
            if longName == nil, header[257..<262].elementsEqual("ustar".utf8) {
                let prefix = string(header[345..<500])
                if !prefix.isEmpty { entryName = prefix + "/" + entryName }
            }
            longName = nil
            paxSize = nil
            let isRegular = type == UInt8(ascii: "0") || type == 0 || type == UInt8(ascii: "7")
            if isRegular, normalized(entryName) == wanted {
                return Entry(dataOffset: dataOffset, size: size)
            }
        }
    }

    static func normalized(_ name: String) -> String {
        name.split(separator: "/").filter { $0 != "." && !$0.isEmpty }.joined(separator: "/")
    }

    private static func string(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// An octal field, or a base-256 one (GNU, for sizes of 8 GiB and more).
    private static func number(_ field: ArraySlice<UInt8>, at position: Int64) throws -> Int64 {
        if let first = field.first, first & 0x80 != 0 {
            return field.dropFirst().reduce(Int64(first & 0x7F)) { $0 << 8 | Int64($1) }
        }
        let digits = field.prefix { $0 != 0 && $0 != UInt8(ascii: " ") }.drop { $0 == UInt8(ascii: " ") }
        guard let value = Int64(String(decoding: digits, as: UTF8.self), radix: 8), value >= 0 else {
            throw Malformed(description: "bad number field at byte \(position)")
        }
        return value
    }

    private static func checksumMatches(_ header: [UInt8]) -> Bool {
        let recorded = header[148..<156].prefix { $0 != 0 && $0 != UInt8(ascii: " ") }.drop { $0 == UInt8(ascii: " ") }
        guard let expected = Int(String(decoding: recorded, as: UTF8.self), radix: 8) else { return false }
        var sum = 0
        for (index, byte) in header.enumerated() { sum += (148..<156).contains(index) ? 32 : Int(byte) }
        return sum == expected
    }

    /// `"LEN key=value\n"` records of a pax extended header.
    private static func paxRecords(_ data: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        var rest = data[...]
        while let space = rest.firstIndex(of: UInt8(ascii: " ")),
              let length = Int(String(decoding: rest[rest.startIndex..<space], as: UTF8.self)),
              length > 0, rest.count >= length {
            let record = rest[rest.index(after: space)..<(rest.startIndex + length - 1)]
            if let equals = record.firstIndex(of: UInt8(ascii: "=")) {
                fields[String(decoding: record[record.startIndex..<equals], as: UTF8.self)] =
                    String(decoding: record[record.index(after: equals)...], as: UTF8.self)
            }
            rest = rest[(rest.startIndex + length)...]
        }
        return fields
    }

    private static func readData(_ fd: Int32, at offset: Int64, count: Int64) throws -> [UInt8] {
        guard count <= 1 << 20 else { throw Malformed(description: "a \(count)-byte metadata entry at byte \(offset)") }
        var bytes = [UInt8](repeating: 0, count: Int(count))
        guard try readFully(fd, into: &bytes, at: offset) else {
            throw Malformed(description: "the archive ends inside an entry at byte \(offset)")
        }
        return bytes
    }

    /// Fills `buffer` from `offset`; `false` at end of file before the first byte.
    private static func readFully(_ fd: Int32, into buffer: inout [UInt8], at offset: Int64) throws -> Bool {
        var filled = 0
        while filled < buffer.count {
            let got = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, $0.count - filled, off_t(offset) + off_t(filled)) }
            if got < 0 {
                if errno == EINTR { continue }
                throw Malformed(description: String(cString: strerror(errno)))
            }
            if got == 0 {
                if filled == 0 { return false }
                throw Malformed(description: "the archive ends inside a header at byte \(offset)")
            }
            filled += got
        }
        return true
    }
}
