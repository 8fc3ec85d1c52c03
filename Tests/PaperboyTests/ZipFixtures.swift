import Foundation
import Testing
import ZIPFoundation

/// One entry of a zip archive written by ``makeZip(_:)``.
enum ZipItem {
    case file(String, Data)
    case directory(String)
    case link(String, String)
}

/// Writes a zip archive with exactly these entries (malicious ones included), deflated.
func makeZip(_ items: [ZipItem]) throws -> Data {
    let archive = try Archive(data: Data(), accessMode: .create)
    for item in items {
        switch item {
        case .file(let path, let data):
            try archive.addEntry(with: path, type: .file, uncompressedSize: Int64(data.count), compressionMethod: .deflate) { position, size in
                data.subdata(in: Int(position)..<Int(position) + size)
            }
        case .directory(let path):
            try archive.addEntry(with: path, type: .directory, uncompressedSize: Int64(0)) { _, _ in Data() }
        case .link(let path, let target):
            let data = Data(target.utf8)
            try archive.addEntry(with: path, type: .symlink, uncompressedSize: Int64(data.count)) { position, size in
                data.subdata(in: Int(position)..<Int(position) + size)
            }
        }
    }
    return try #require(archive.data)
}

/// `zip` with the uncompressed size of every entry rewritten to `size`, in the local headers
/// and in the central directory alike: a header that lies about what the data inflates to.
func declaring(_ size: UInt32, in zip: Data) -> Data {
    var bytes = [UInt8](zip)
    // (signature, offset of the uncompressed size field)
    for (signature, field) in [(UInt32(0x0403_4b50), 22), (UInt32(0x0201_4b50), 24)] {
        var index = 0
        while index + field + 4 <= bytes.count {
            if UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24 == signature {
                for byte in 0..<4 { bytes[index + field + byte] = UInt8(truncatingIfNeeded: size >> (8 * UInt32(byte))) }
                index += field + 4
            } else {
                index += 1
            }
        }
    }
    return Data(bytes)
}
