import CPaperboySSH2
import Paperboy
@testable import PaperboySFTP
import Testing

@Suite("sftp attributes", .timeLimit(.minutes(1)))
struct SFTPAttributesTests {
    /// A server may announce any 64-bit size; sshd cannot be made to, so the attributes are built here.
    /// The size is clamped (never a trap), and a size above 2^62 is then refused where every
    /// transport's length is checked, the sink's `begin` (StorageSpaceTests).
    @Test(arguments: [UInt64.max, UInt64(Int64.max) + 1, UInt64(1 << 62) + 1])
    func anAnnouncedSizeBeyondWhatTheLibraryTakesIsClampedThenRefused(announced: UInt64) {
        var raw = LIBSSH2_SFTP_ATTRIBUTES()
        raw.flags = UInt(PAPERBOY_SFTP_ATTR_SIZE)
        raw.filesize = announced
        let attributes = SFTPAttributes(raw)
        let size = attributes.size ?? -1
        #expect(size >= 0)
        #expect(throws: BoundaryError.self) { try ByteCount(size, door: "sftp size") }
    }

    @Test func aSizeWithinTheRangeIsKeptExactly() throws {
        var raw = LIBSSH2_SFTP_ATTRIBUTES()
        raw.flags = UInt(PAPERBOY_SFTP_ATTR_SIZE)
        raw.filesize = 1 << 62
        #expect(try ByteCount(SFTPAttributes(raw).size ?? -1, door: "sftp size").bytes == 1 << 62)
    }
}
