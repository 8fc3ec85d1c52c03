import Foundation
import PaperboyTesting
import Testing
@testable import PaperboyConfig

@Suite(.timeLimit(.minutes(1))) struct SecretTests {
    @Test func configurationDescriptionsNeverRevealSecrets() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        try "file-secret-value\n".write(to: folder.url.appendingPathComponent("token.txt"), atomically: true, encoding: .utf8)
        let text = """
            [[credentials]]
            match = "https://cdn.example.com/"
            username = "reader"
            password_env = "CDN_PASSWORD"
            token_file = "token.txt"
            passphrase_env = "KEY_PASSPHRASE"
            """
        let environment = ["HOME": "/home/reader", "CDN_PASSWORD": "env-secret-value", "KEY_PASSPHRASE": "phrase-secret-value"]
        let config = try PaperboyConfiguration.parse(
            text, fileURL: folder.url.appendingPathComponent("paperboy.toml"), environment: environment
        )
        var dumped = ""
        dump(config, to: &dumped)
        let mirrored = Mirror(reflecting: try #require(config.credentials.first?.password)).children.map { "\($0)" }
        for rendering in [String(describing: config), String(reflecting: config), dumped, "\(config.credentials)"] + mirrored {
            #expect(rendering.contains("Secret(env: CDN_PASSWORD)") || mirrored.contains(rendering))
            for secret in ["env-secret-value", "phrase-secret-value", "file-secret-value"] {
                #expect(!rendering.contains(secret))
            }
        }
        #expect(mirrored.isEmpty)
        let credential = try #require(config.credentials.first)
        #expect(String(describing: credential.password!) == "Secret(env: CDN_PASSWORD)")
        #expect(String(reflecting: credential.token!) == "Secret(file: \(folder.url.appendingPathComponent("token.txt").standardizedFileURL.path))")
        #expect(try credential.password?.reveal() == "env-secret-value")
        #expect(try credential.token?.reveal() == "file-secret-value")
    }

    @Test func fileSecretsAreReadLazilyAndLoseOneTrailingNewline() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        let file = folder.url.appendingPathComponent("secret.txt")
        let secret = Secret(file: file)
        #expect(throws: ConfigError.self) { try secret.reveal() }

        try "line\n\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try secret.reveal() == "line\n")
        try "crlf\r\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try secret.reveal() == "crlf")
        try "bare".write(to: file, atomically: true, encoding: .utf8)
        #expect(try secret.reveal() == "bare")
    }

    @Test func unreadableSecretErrorNamesThePathOnly() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        let file = folder.url.appendingPathComponent("gone.txt")
        try "value-that-must-not-leak".write(to: file, atomically: true, encoding: .utf8)
        let secret = Secret(file: file)
        try FileManager.default.removeItem(at: file)
        let error = try #require(throws: ConfigError.self) { try secret.reveal() }
        #expect(error.code == .missingSecretFile)
        #expect(error.description.contains(file.path))
    }
}
