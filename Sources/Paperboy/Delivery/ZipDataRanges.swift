import Foundation

/// Checks, before anything is extracted, that every entry's data lies inside the archive file.
///
/// ZIPFoundation reads an entry's data in a loop until it has its declared compressed size; at
/// the end of the file it gets empty chunks and never stops (a fuzzed 329-byte archive whose
/// entry's data began at its last byte spun forever). So each entry's local header is read at
/// the offset the central directory gives, and the data after it (30 bytes, the name, the
/// extra field) must end within the file; otherwise the archive is refused.
///
/// Only what is needed is read: the end record (the last 64 KiB at most), the central
/// directory one entry at a time, and each local header's 30 bytes (ZIP64 sizes and offsets
/// included).
enum ZipDataRanges {
    static func check(_ url: URL, named name: String) throws(LibraryError) {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw LibraryError(.storage, SystemFailure.message("cannot open", url.path))
        }
        defer { try? handle.close() }
        let refuse = { (why: String) in LibraryError(.invalidRequest, "\(name) is not a readable zip archive: \(why)") }
        func read(_ offset: UInt64, _ count: Int) throws(LibraryError) -> [UInt8] {
            do {
                try handle.seek(toOffset: offset)
                let data = try handle.read(upToCount: count) ?? Data()
                guard data.count == count else { throw refuse("\(count) bytes at \(offset) lie past its end") }
                return [UInt8](data)
            } catch let error as LibraryError {
                throw error
            } catch {
                throw LibraryError(.storage, SystemFailure.message("cannot read", url.path))
            }
        }
        let size: UInt64
        do {
            size = try handle.seekToEnd()
        } catch {
            throw LibraryError(.storage, SystemFailure.message("cannot read", url.path))
        }
        // The end of central directory record: 22 bytes, after which a comment of up to 65,535.
        let tailLength = Int(min(size, 22 + 65_535))
        let tail = try read(size - UInt64(tailLength), tailLength)
        guard tailLength >= 22, let end = stride(from: tailLength - 22, through: 0, by: -1).first(where: { Self.u32(tail, $0) == 0x0605_4B50 }) else {
            throw refuse("no end of central directory record")
        }
        var count = UInt64(Self.u16(tail, end + 10))
        var directory = UInt64(Self.u32(tail, end + 16))
        if count == 0xFFFF || directory == 0xFFFF_FFFF {
            // ZIP64: the locator (20 bytes) just before the end record gives the ZIP64 end record.
            let endOffset = size - UInt64(tailLength) + UInt64(end)
            guard endOffset >= 20 else { throw refuse("no ZIP64 end of central directory locator") }
            let locator = try read(endOffset - 20, 20)
            guard Self.u32(locator, 0) == 0x0706_4B50 else { throw refuse("no ZIP64 end of central directory locator") }
            let record = try read(Self.u64(locator, 8), 56)
            guard Self.u32(record, 0) == 0x0606_4B50 else { throw refuse("no ZIP64 end of central directory record") }
            count = Self.u64(record, 32)
            directory = Self.u64(record, 48)
        }
        var position = directory
        for _ in 0..<min(count, UInt64(ArchivePlan.maxEntries) + 1) {
            let header = try read(position, 46)
            guard Self.u32(header, 0) == 0x0201_4B50 else { throw refuse("a central directory entry at \(position) is damaged") }
            var compressed = UInt64(Self.u32(header, 20))
            let uncompressed = UInt64(Self.u32(header, 24))
            let nameLength = UInt64(Self.u16(header, 28)), extraLength = Int(Self.u16(header, 30)), commentLength = UInt64(Self.u16(header, 32))
            var local = UInt64(Self.u32(header, 42))
            if compressed == 0xFFFF_FFFF || local == 0xFFFF_FFFF {
                // The ZIP64 extra field holds, in order, the sizes and offset that do not fit.
                let extra = try read(position + 46 + nameLength, extraLength)
                var index = 0
                while index + 4 <= extra.count {
                    let id = Self.u16(extra, index), length = Int(Self.u16(extra, index + 2))
                    guard index + 4 + length <= extra.count else { break }
                    if id == 0x0001 {
                        var field = index + 4
                        func next() -> UInt64? {
                            guard field + 8 <= index + 4 + length else { return nil }
                            defer { field += 8 }
                            return Self.u64(extra, field)
                        }
                        if uncompressed == 0xFFFF_FFFF { _ = next() }
                        if compressed == 0xFFFF_FFFF { compressed = next() ?? compressed }
                        if local == 0xFFFF_FFFF { local = next() ?? local }
                    }
                    index += 4 + length
                }
            }
            let localHeader = try read(local, 30)
            guard Self.u32(localHeader, 0) == 0x0403_4B50 else { throw refuse("the local header at \(local) is damaged") }
            let dataStart = local + 30 + UInt64(Self.u16(localHeader, 26)) + UInt64(Self.u16(localHeader, 28))
            let (dataEnd, overflow) = dataStart.addingReportingOverflow(compressed)
            guard !overflow, dataEnd <= size else {
                throw refuse("an entry's \(compressed) bytes of data at \(dataStart) end past the file's \(size) bytes")
            }
            position += 46 + nameLength + UInt64(extraLength) + commentLength
        }
    }

    private static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 { UInt32(u16(bytes, at)) | UInt32(u16(bytes, at + 2)) << 16 }
    private static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 { UInt64(u32(bytes, at)) | UInt64(u32(bytes, at + 4)) << 32 }
}
