import Foundation

extension ZsyncIndex {
    /// How much a reader accepts: the largest file a control file may describe and the most blocks.
    package struct Limits: Sendable, Equatable {
        /// The largest file a control file may describe.
        package var maxFileSize: Int64
        /// The most blocks: each block's checksums are held in memory (up to 20 bytes, and 16
        /// more while a seed is matched against them).
        package var maxBlocks: Int

        /// The longest header: the lines before the blank line (`zsyncmake` writes about 200 bytes).
        package static let maxHeaderBytes = 16 << 10
        /// The smallest and largest block sizes read (`zsyncmake` picks 2 KiB or 4 KiB).
        package static let blockSizes = 256...(16 << 20)

        package init(maxFileSize: Int64, maxBlocks: Int) {
            self.maxFileSize = maxFileSize
            self.maxBlocks = maxBlocks
        }

        /// The most bytes a control file within these limits can have: the header, then 4 bytes
        /// of rolling checksum and 16 of MD4 per block at most. A reader fetching one asks for no more.
        package var maxControlBytes: Int { Self.maxHeaderBytes + max(0, maxBlocks) * (4 + 16) }
    }

    /// Reads a control file from a stranger: the header's lines one by one, every number checked
    /// before it is used, then exactly the checksums its `Length`, `Blocksize` and
    /// `Hash-Lengths` announce.
    ///
    /// Headers this reader does not use (`Filename`, `MTime`, `URL`, and any it does not know)
    /// are passed over: the asset's own URL is fetched, never one a control file names.
    ///
    /// - Parameters:
    ///   - source: the control file's URL or path, for errors.
    ///   - limits: the largest file it may describe and the most blocks.
    /// - Throws: ``ZsyncIndexError`` naming `source`, the line and the problem.
    package static func decode(_ data: Data, from source: String, limits: Limits) throws(ZsyncIndexError) -> ZsyncIndex {
        let result = data.withUnsafeBytes { bytes -> Result<ZsyncIndex, ZsyncIndexError> in
            do throws(ZsyncIndexError) {
                return .success(try read(bytes, from: source, limits: limits))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func read(_ bytes: UnsafeRawBufferPointer, from source: String, limits: Limits) throws(ZsyncIndexError) -> ZsyncIndex {
        func refuse(_ kind: ZsyncIndexError.Kind, line: Int? = nil, _ problem: String) -> ZsyncIndexError {
            ZsyncIndexError(source: source, kind: kind, line: line, problem: problem)
        }
        let magic = Array("zsync: ".utf8)
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            if bytes.count < magic.count, bytes.elementsEqual(magic.prefix(bytes.count)) {
                throw refuse(.truncated, "\(bytes.count) bytes, cut short in its first line")
            }
            throw refuse(.notZsync, "not a zsync control file: it does not begin with 'zsync: '")
        }
        // The header ends at the first empty line; only the first maxHeaderBytes are looked at.
        let newline = UInt8(ascii: "\n")
        var headerEnd: Int?
        var position = 0
        let searched = min(bytes.count, Limits.maxHeaderBytes + 1)
        while position + 1 < searched {
            if bytes[position] == newline, bytes[position + 1] == newline {
                headerEnd = position + 1
                break
            }
            position += 1
        }
        guard let headerEnd else {
            if bytes.count > Limits.maxHeaderBytes {
                throw refuse(.header, "no empty line ends the header within its first \(Limits.maxHeaderBytes) bytes")
            }
            throw refuse(.truncated, "\(bytes.count) bytes, and no empty line ends the header")
        }
        var header = Header()
        var lineNumber = 0
        var lineStart = 0
        while lineStart < headerEnd {
            lineNumber += 1
            var lineEnd = lineStart
            while bytes[lineEnd] != newline { lineEnd += 1 }
            let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[lineStart..<lineEnd]), as: UTF8.self)
            try header.take(line, number: lineNumber, source: source, limits: limits)
            lineStart = lineEnd + 1
        }
        guard let blockSize = header.blockSize else { throw refuse(.header, "no 'Blocksize' line") }
        guard let length = header.length else { throw refuse(.header, "no 'Length' line") }
        guard let sha1 = header.sha1 else { throw refuse(.header, "no 'SHA-1' line: the whole file could not be checked") }
        let (sequenceMatches, rsumBytes, checksumBytes) = header.hashLengths ?? (1, 4, 16)
        // length ≤ maxFileSize (an Int64) and blockSize ≥ 256: no overflow.
        let blocks = length == 0 ? 0 : (length - 1) / Int64(blockSize) + 1
        guard blocks <= Int64(max(0, limits.maxBlocks)) else {
            throw refuse(.size, "\(blocks) blocks of \(blockSize) bytes for a file of \(length) bytes; the limit is \(limits.maxBlocks) blocks")
        }
        let count = Int(blocks)
        let entrySize = rsumBytes + checksumBytes
        let body = bytes.count - (headerEnd + 1)
        let needed = count * entrySize
        if body < needed {
            throw refuse(.truncated, "\(body) bytes of checksums after the header; its \(count) blocks (Length \(length), Blocksize \(blockSize), "
                         + "\(entrySize) bytes each) need \(needed) (block \(body / entrySize + 1) is cut short)")
        }
        if body > needed {
            throw refuse(.trailing, "\(body - needed) bytes after the checksums of its \(count) blocks (byte \(headerEnd + 1 + needed)): "
                         + "its Length \(length) and Blocksize \(blockSize) announce \(needed) bytes of checksums")
        }
        var rsums: [UInt32] = []
        rsums.reserveCapacity(count)
        var checksums: [UInt8] = []
        checksums.reserveCapacity(count * checksumBytes)
        var at = headerEnd + 1
        for _ in 0..<count {
            // The last rsumBytes bytes of A and B, both big-endian: B whole, then as much of A as fits.
            var packed: UInt32 = 0
            for offset in 0..<rsumBytes { packed = packed << 8 | UInt32(bytes[at + offset]) }
            rsums.append(packed)
            checksums.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[at + rsumBytes..<at + entrySize]))
            at += entrySize
        }
        return ZsyncIndex(fileSize: length, blockSize: blockSize, sequenceMatches: sequenceMatches, rsumBytes: rsumBytes,
                          checksumBytes: checksumBytes, sha1: sha1, rsums: rsums, checksums: checksums)
    }
}

/// The header lines read so far, each value checked as it is read.
private struct Header {
    var blockSize: Int?
    var length: Int64?
    var hashLengths: (Int, Int, Int)?
    var sha1: [UInt8]?

    mutating func take(_ line: String, number: Int, source: String, limits: ZsyncIndex.Limits) throws(ZsyncIndexError) {
        func refuse(_ problem: String, kind: ZsyncIndexError.Kind = .header) -> ZsyncIndexError {
            ZsyncIndexError(source: source, kind: kind, line: number, problem: problem)
        }
        let shown = Self.shown(line)
        guard let separator = line.range(of: ": ") else { throw refuse("'\(shown)' is not a 'Name: value' line") }
        let name = String(line[..<separator.lowerBound])
        let value = String(line[separator.upperBound...])
        func decimal(_ most: Int64) throws(ZsyncIndexError) -> Int64 {
            guard !value.isEmpty, value.count <= 19, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let number = Int64(value) else {
                throw refuse("\(name) '\(Self.shown(value))' is not a number")
            }
            guard number <= most else { throw refuse("\(name) \(number) is above the \(most) read here", kind: .size) }
            return number
        }
        func once<Value>(_ present: Value?) throws(ZsyncIndexError) {
            if present != nil { throw refuse("a second '\(name)' line") }
        }
        switch name {
        case "zsync":
            guard number == 1 else { throw refuse("a second 'zsync' line") }
        case "Blocksize":
            try once(blockSize)
            let size = try decimal(Int64(ZsyncIndex.Limits.blockSizes.upperBound))
            guard size > 0, size & (size - 1) == 0, ZsyncIndex.Limits.blockSizes.contains(Int(size)) else {
                throw refuse("the block size \(size) is not a power of two from \(ZsyncIndex.Limits.blockSizes.lowerBound) to \(ZsyncIndex.Limits.blockSizes.upperBound)")
            }
            blockSize = Int(size)
        case "Length":
            try once(length)
            length = try decimal(max(0, limits.maxFileSize))
        case "Hash-Lengths":
            try once(hashLengths)
            let parts = value.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 3, let sequence = Int(parts[0]), let rsum = Int(parts[1]), let checksum = Int(parts[2]),
                  (1...2).contains(sequence), (2...4).contains(rsum), (3...16).contains(checksum) else {
                throw refuse("Hash-Lengths '\(Self.shown(value))': expected 'matches,rsum,checksum' with matches 1 or 2, rsum 2 to 4, checksum 3 to 16")
            }
            hashLengths = (sequence, rsum, checksum)
        case "SHA-1":
            try once(sha1)
            let digits = Array(value.utf8)
            func nibble(_ digit: UInt8) -> UInt8? {
                switch digit {
                case 0x30...0x39: digit - 0x30
                case 0x61...0x66: digit - 0x61 + 10
                case 0x41...0x46: digit - 0x41 + 10
                default: nil
                }
            }
            let nibbles = digits.compactMap(nibble)
            guard digits.count == 40, nibbles.count == 40 else { throw refuse("SHA-1 '\(Self.shown(value))' is not 40 hexadecimal digits") }
            sha1 = stride(from: 0, to: 40, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
        case "Strong-Hash-Algorithm":
            guard value.uppercased() == "MD4" else { throw refuse("block checksums by '\(Self.shown(value))'; this reader checks MD4 only") }
        case "Z-Map2":
            // Binary data follows this line: the control file of a compressed file, which this
            // reader does not take apart.
            throw refuse("a control file made from a compressed file (Z-Map2), which Paperboy does not read")
        default:
            // Filename, MTime, URL, Safe, Z-URL, Recompress, and headers of later writers: not used.
            break
        }
    }

    /// `text` as an error shows it: at most 64 characters, control characters as `?`.
    static func shown(_ text: String) -> String {
        let cleaned = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : Character($0) })
        return cleaned.count > 64 ? String(cleaned.prefix(64)) + "…" : cleaned
    }
}
