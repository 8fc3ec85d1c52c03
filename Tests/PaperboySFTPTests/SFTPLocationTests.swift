import Foundation
import Paperboy
@testable import PaperboySFTP
import Testing

@Suite("sftp URLs", .timeLimit(.minutes(1)))
struct SFTPLocationTests {
    @Test func parsesUserHostPortAndDecodesThePath() throws {
        let location = try SFTPLocation(URL(string: "sftp://alice@files.example.com:2222/pub/a%20b%C3%A9.pdf")!)
        #expect(location.user == "alice")
        #expect(location.host == "files.example.com")
        #expect(location.port == 2222)
        #expect(location.path == "/pub/a bé.pdf")
        #expect(location.knownHostsName == "[files.example.com]:2222")
        #expect(location.url.absoluteString == "sftp://files.example.com:2222/pub/a%20b%C3%A9.pdf")
    }

    @Test func tildeIsTheLoginFolderAsWithOpenSSH() throws {
        #expect(try SFTPLocation(URL(string: "sftp://h/~/in/home.txt")!).path == "in/home.txt")
        #expect(try SFTPLocation(URL(string: "sftp://h/~user-file")!).path == "/~user-file")
        #expect(try SFTPLocation(URL(string: "sftp://h/abs/file")!).path == "/abs/file")
        #expect(try SFTPLocation(URL(string: "sftp://h/abs/file")!).knownHostsName == "h")
    }

    /// Host rules (user, known_hosts) are chosen by ``URLScope`` on the path the server reads:
    /// `~/premium/%2e%2e/other` is not under `~/premium`.
    @Test func aHostRuleAppliesToThePathTheServerReads() throws {
        let premium = SFTPTransport.HostRule(scope: try #require(URLScope(string: "sftp://files.example.com/~/premium")), user: "premium")
        let origin = SFTPTransport.HostRule(scope: try #require(URLScope(string: "sftp://files.example.com")), user: "guest")
        let configuration = SFTPTransport.Configuration(identityFiles: [], usesAgent: false, hosts: [origin, premium])
        func user(_ text: String) -> String? { configuration.rule(for: URL(string: text)!)?.user }
        #expect(user("sftp://files.example.com/~/premium/a.pdf") == "premium")
        #expect(user("sftp://FILES.example.com.:22/~/premium/./b.pdf") == "premium")
        #expect(user("sftp://files.example.com/~/premium/%2e%2e/other/a.pdf") == "guest")
        #expect(user("sftp://files.example.com/~/premium%2f..%2fother/a.pdf") == "guest")
        #expect(user("sftp://files.example.com:2222/~/premium/a.pdf") == nil)
    }

    @Test func rejectsURLsWithoutAFile() {
        for text in ["sftp://h/", "sftp://h", "sftp://h/folder/", "http://h/file"] {
            #expect(throws: TransportError.self, "\(text)") { try SFTPLocation(URL(string: text)!) }
        }
    }

    @Test func aPasswordInTheURLNeverShowsInErrors() throws {
        let location = try SFTPLocation(URL(string: "sftp://bob:s3cret@h/file")!)
        #expect(location.password == "s3cret")
        #expect(!location.url.absoluteString.contains("s3cret"))
    }
}
