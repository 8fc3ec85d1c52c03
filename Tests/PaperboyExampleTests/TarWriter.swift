import Foundation

/// Writes uncompressed tar archives for tests: ustar headers, and a pax header for long names.
enum TarWriter {
    static func archive(_ entries: [(name: String, data: Data)]) -> Data {
        var archive = Data()
        for (name, data) in entries {
            if name.utf8.count > 100 {
                let record = paxRecord("path", name)
                archive.append(header(name: "PaxHeader", size: record.count, type: "x"))
                archive.append(padded(record))
            }
            archive.append(header(name: String(name.suffix(100)), size: data.count, type: "0"))
            archive.append(padded(data))
        }
        archive.append(Data(count: 1024))
        return archive
    }

    private static func header(name: String, size: Int, type: Character) -> Data {
        var block = [UInt8](repeating: 0, count: 512)
        func put(_ text: String, at offset: Int) {
            for (index, byte) in text.utf8.enumerated() { block[offset + index] = byte }
        }
        put(name, at: 0)
        put("0000644", at: 100)
        put("0000000", at: 108)
        put("0000000", at: 116)
        put(String(format: "%011o", size), at: 124)
        put(String(format: "%011o", 1_700_000_000), at: 136)
        put("        ", at: 148)
        block[156] = type.asciiValue!
        put("ustar", at: 257)
        put("00", at: 263)
        let sum = block.reduce(0) { $0 + Int($1) }
        put(String(format: "%06o", sum), at: 148)
        block[154] = 0
        return Data(block)
    }

    private static func paxRecord(_ key: String, _ value: String) -> Data {
        let body = " \(key)=\(value)\n"
        var length = body.utf8.count + 1
        while "\(length)\(body)".utf8.count != length { length += 1 }
        return Data("\(length)\(body)".utf8)
    }

    private static func padded(_ data: Data) -> Data {
        data + Data(count: (512 - data.count % 512) % 512)
    }
}
