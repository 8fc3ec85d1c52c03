import Foundation
import PaperboyTesting
import Testing

/// Configuration files found by `scripts/fuzz config` that stop `paperboy` before it can say
/// what is wrong. Run as a process: an assertion in the TOML reader ends the process it runs in.
@Suite("Configuration files the TOML reader trips on", .timeLimit(.minutes(2)))
struct ConfigFileFuzzFindingsTests {
    let workspace = Workspace()

    /// toml++ 3.4.0 (vendored by TOMLKit 0.6.0) checks only for `]` after a table header's `[`
    /// or `[[`, then asserts that a key starts there: any other character (`[é]`, `[=]`,
    /// `[[ #]]`) aborts the process (SIGABRT), in a release build too (SwiftPM compiles the C++
    /// without `NDEBUG`). It must be a configuration error naming the
    /// file and line, as `[a.é]` already is.
    @Test(arguments: ["[é]\n", "[library]\npath = \"lib\"\n[ é]\n", "[[é]]\n", "[=]\n"])
    func aTableHeaderNotStartingWithAKeyIsAConfigurationError(_ text: String) async throws {
        let file = workspace.write(text, to: "paperboy.toml")
        let result = try await CLI.run(["status", "--config", file.path])
        withKnownIssue("toml++ 3.4.0 asserts in parse_key() (toml.hpp:15481) instead of reporting an error") {
            #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("paperboy.toml:"), "\(result.stderr)")
        }
    }

    /// toml++ 3.4.0 asserts in `parse_value()` (toml.hpp:14994, `!is_value_terminator(*cp)`) on a
    /// `}` where an array expects a value; `a = }` and `a = [,]` are already configuration errors.
    @Test(arguments: ["a = [}]\n", "[library]\npath = [1,\n}]\n", "a = [ # c\n}]\n"])
    func aBraceWhereAnArrayExpectsAValueIsAConfigurationError(_ text: String) async throws {
        let file = workspace.write(text, to: "paperboy.toml")
        let result = try await CLI.run(["status", "--config", file.path])
        withKnownIssue("toml++ 3.4.0 asserts in parse_value() (toml.hpp:14994) instead of reporting an error") {
            #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("paperboy.toml:"), "\(result.stderr)")
        }
    }

    /// toml++ 3.4.0 asserts in `parse_time()` (toml.hpp:14790, `is_decimal_digit(*cp)`) on a date
    /// followed by `T` and a letter when a time follows further on; `2026-11-21T` alone is refused.
    @Test func aDateWithALetterAfterItsTIsAConfigurationError() async throws {
        let file = workspace.write("[[issues]]\nname = \"a\"\ndate = 2026-11-21Tm23:00:00\n", to: "paperboy.toml")
        let result = try await CLI.run(["status", "--config", file.path])
        withKnownIssue("toml++ 3.4.0 asserts in parse_time() (toml.hpp:14790) instead of reporting an error") {
            #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("paperboy.toml:"), "\(result.stderr)")
        }
    }
}
