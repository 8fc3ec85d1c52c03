import Foundation
import Testing
@testable import PaperboyConfig

/// A configuration that must fail, and exactly how.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    var name: String
    var text: String
    var line: Int
    var key: String?
    var code: ConfigError.Code
    var suggestion: String? = nil
    /// Text the description must end with (after the file path), or contain.
    var message: String
    var environment: [String: String] = fixtureEnvironment

    var testDescription: String { name }
}

@Suite(.timeLimit(.minutes(1))) struct MalformedConfigTests {
    static let cases: [MalformedCase] = [
        MalformedCase(
            name: "bad TOML syntax",
            text: "[scheduler]\nmax_concurrent = = 4\n",
            line: 2, key: nil, code: .syntax, message: "paperboy.toml:2:"
        ),
        MalformedCase(
            // toml++ stops at 256 levels (TOML_MAX_NESTED_VALUES), before anything recurses on them.
            name: "values nested deeper than the TOML parser allows",
            text: "[library]\nmode = \"foreground\"\nx = " + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "\n",
            line: 3, key: nil, code: .syntax, message: "256"
        ),
        MalformedCase(
            name: "unknown key",
            text: "# comment\n[scheduler]\nmax_concurent = 4\n",
            line: 3, key: "scheduler.max_concurent", code: .unknownKey, suggestion: "max_concurrent",
            message: "paperboy.toml:3: unknown key 'max_concurent' in [scheduler]; did you mean 'max_concurrent'?"
        ),
        MalformedCase(
            name: "unknown key in an asset",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"a.pdf\"\nsha265 = \"x\"\n",
            line: 6, key: "issues[0].assets[0].sha265", code: .unknownKey, suggestion: "sha256",
            message: "paperboy.toml:6: unknown key 'sha265' in [[issues.assets]]; did you mean 'sha256'?"
        ),
        MalformedCase(
            name: "a rate as an archive size",
            text: "[library]\nmax_unpacked_size = \"2GiB/s\"\n",
            line: 2, key: "library.max_unpacked_size", code: .invalidValue,
            message: "library.max_unpacked_size: expected a size such as \"500MB\", \"2GiB\" or a number of bytes (units B, KB, MB, GB, "
                + "KiB, MiB, GiB; at most 2^62 bytes), got \"2GiB/s\""
        ),
        MalformedCase(
            name: "a size above 2^62 bytes, as an integer",
            text: "[library]\nmax_unpacked_size = 4611686018427387905\n",
            line: 2, key: "library.max_unpacked_size", code: .invalidValue,
            message: "expected a number of bytes (a whole number from 0 to 2^62), got 4611686018427387905"
        ),
        MalformedCase(
            name: "a size above 2^62 bytes, with a unit",
            text: "[library]\nmin_free_space = \"4294967297GiB\"\n",
            line: 2, key: "library.min_free_space", code: .invalidValue,
            message: "at most 2^62 bytes), got \"4294967297GiB\""
        ),
        MalformedCase(
            name: "a size in megabits",
            text: "[library]\nmax_unpacked_size = \"500Mb\"\n",
            line: 2, key: "library.max_unpacked_size", code: .invalidValue,
            message: "got \"500Mb\""
        ),
        MalformedCase(
            name: "a zero archive ratio",
            text: "[library]\nmax_unpack_ratio = 0\n",
            line: 2, key: "library.max_unpack_ratio", code: .invalidValue,
            message: "expected an integer of at least 1, got 0"
        ),
        MalformedCase(
            name: "unknown key without a near match",
            text: "[network]\nallowed = [\"wifi\"]\ncolour = \"blue\"\n",
            line: 3, key: "network.colour", code: .unknownKey,
            message: "paperboy.toml:3: unknown key 'colour' in [network]"
        ),
        MalformedCase(
            name: "unknown table",
            text: "[library]\nmode = \"foreground\"\n\n[schedular]\nmax_concurrent = 4\n",
            line: 4, key: "schedular", code: .unknownTable, suggestion: "scheduler",
            message: "paperboy.toml:4: unknown table 'schedular'; did you mean 'scheduler'?"
        ),
        MalformedCase(
            name: "unknown array of tables",
            text: "[[issue]]\nname = \"a\"\n",
            line: 1, key: "issue", code: .unknownTable, suggestion: "issues",
            message: "paperboy.toml:1: unknown table 'issue'; did you mean 'issues'?"
        ),
        MalformedCase(
            name: "wrong type",
            text: "[scheduler]\nmax_per_host = 2\nmax_concurrent = \"4\"\n",
            line: 3, key: "scheduler.max_concurrent", code: .typeMismatch,
            message: "paperboy.toml:3: scheduler.max_concurrent: expected an integer, got a string"
        ),
        MalformedCase(
            name: "section of the wrong type",
            text: "scheduler = 4\n",
            line: 1, key: "scheduler", code: .typeMismatch,
            message: "scheduler: expected a table ([scheduler]), got an integer"
        ),
        MalformedCase(
            name: "number below 1",
            text: "[scheduler]\nretry_attempts = 0\n",
            line: 2, key: "scheduler.retry_attempts", code: .invalidValue,
            message: "scheduler.retry_attempts: expected an integer of at least 1, got 0"
        ),
        MalformedCase(
            name: "bad rate",
            text: "[bandwidth]\nlimit = \"10 Mbps\"\n",
            line: 2, key: "bandwidth.limit", code: .invalidValue,
            message: "bandwidth.limit: expected a rate like \"10MB/s\""
        ),
        MalformedCase(
            name: "zero rate",
            text: "[bandwidth]\nper_transfer = 0\n",
            line: 2, key: "bandwidth.per_transfer", code: .invalidValue,
            message: "bandwidth.per_transfer: expected a rate of at least 1 B/s and at most 2^62 B/s, got 0 (use \"off\" for unlimited)"
        ),
        MalformedCase(
            name: "a rate above 2^62 bytes per second",
            text: "[bandwidth]\nlimit = \"4294967297GiB/s\"\n",
            line: 2, key: "bandwidth.limit", code: .invalidValue,
            message: "expected a rate of at least 1 B/s and at most 2^62 B/s, got \"4294967297GiB/s\""
        ),
        MalformedCase(
            name: "bad duration",
            text: "[scheduler]\n\nretry_base_delay = \"5 minutes\"\n",
            line: 3, key: "scheduler.retry_base_delay", code: .invalidValue,
            message: "scheduler.retry_base_delay: expected a duration like \"250ms\""
        ),
        MalformedCase(
            name: "timeout below one second",
            text: "[scheduler]\nconnect_timeout = \"30s\"\nidle_timeout = \"500ms\"\n",
            line: 3, key: "scheduler.idle_timeout", code: .invalidValue,
            message: "idle_timeout must be at least 1s, got 500ms"
        ),
        MalformedCase(
            name: "duration given as a number",
            text: "[notifications]\nthrottle = 3600\n",
            line: 2, key: "notifications.throttle", code: .typeMismatch,
            message: "notifications.throttle: expected a string, got an integer"
        ),
        MalformedCase(
            name: "bad time in schedule",
            text: "[bandwidth]\nschedule = [\n  \"08:00 1MB/s\",\n  \"25:00 off\",\n]\n",
            line: 4, key: "bandwidth.schedule[1]", code: .invalidValue,
            message: "bandwidth.schedule[1]: expected a time HH:MM between 00:00 and 23:59, got \"25:00\""
        ),
        MalformedCase(
            name: "schedule not increasing",
            text: "[bandwidth]\nschedule = [\"19:00 10MB/s\", \"08:00 1MB/s\"]\n",
            line: 2, key: "bandwidth.schedule[1]", code: .invalidValue,
            message: "schedule times must be strictly increasing"
        ),
        MalformedCase(
            name: "bad URL",
            text: "[[feeds]]\nname = \"daily\"\nurl = \"https://example.com/my catalog.json\"\n",
            line: 3, key: "feeds[0].url", code: .invalidValue,
            message: "feeds[0].url: invalid URL \"https://example.com/my catalog.json\": it contains a space"
        ),
        MalformedCase(
            name: "malformed scheme is not taken as a path",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"ht tp://bad url\"\npath = \"a.pdf\"\n",
            line: 5, key: "issues[0].assets[0].url", code: .invalidValue,
            message: "issues[0].assets[0].url: invalid URL \"ht tp://bad url\": it contains a space"
        ),
        MalformedCase(
            name: "scheme-less text with :// is not taken as a path",
            text: "[[feeds]]\nname = \"daily\"\nurl = \"://example.com/catalog.json\"\n",
            line: 3, key: "feeds[0].url", code: .invalidValue,
            message: "feeds[0].url: invalid URL \"://example.com/catalog.json\": expected a URL with a scheme"
        ),
        MalformedCase(
            name: "password in a malformed URL is not echoed",
            text: "[[feeds]]\nname = \"daily\"\nurl = \"h_ttps://alice:s3cret@example.com/catalog.json\"\n",
            line: 3, key: "feeds[0].url", code: .invalidValue,
            message: "feeds[0].url: invalid URL \"h_ttps://…@example.com/catalog.json\": expected a URL with a scheme"
        ),
        MalformedCase(
            name: "empty URL",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"\"\n",
            line: 5, key: "issues[0].assets[0].url", code: .invalidValue,
            message: "expected a URL or a path, got an empty string"
        ),
        MalformedCase(
            name: "bad sha256",
            text: """
                [library]
                path = "lib"

                [[issues]]
                name = "2026-11-21"
                date = 2026-11-21

                  [[issues.assets]]
                  url = "content/2026-11-21.pdf"
                  role = "content"
                  priority = 0
                  path = "magazine.pdf"
                  # the checksum below is wrong
                  sha256 = "abc"
                """,
            line: 14, key: "issues[0].assets[0].sha256", code: .invalidValue,
            message: "paperboy.toml:14: issues[0].assets[0].sha256: expected 64 hexadecimal digits, got \"abc\""
        ),
        MalformedCase(
            name: "path with ..",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\nassets = [\n  { url = \"a.pdf\" },\n  { url = \"b.pdf\", path = \"../b.pdf\" },\n]\n",
            line: 6, key: "issues[0].assets[1].path", code: .invalidValue,
            message: "paperboy.toml:6: issues[0].assets[1].path: '../b.pdf' must not contain '..'"
        ),
        // Issue 26: the configuration had its own copy of the rules for names and paths, and it
        // let through what the library then refused at sync time (`..` as a name, 300-byte
        // components) or read differently (`a//b.pdf` saved as `a/b.pdf`, the catalog refusing it).
        MalformedCase(
            name: "issue name that is the parent folder",
            text: "[[issues]]\nname = \"..\"\ndate = 2026-01-01\n",
            line: 2, key: "issues[0].name", code: .invalidValue,
            message: "paperboy.toml:2: issues[0].name: '..' must not start with '.'"
        ),
        MalformedCase(
            name: "issue name with a bidi override",
            text: "[[issues]]\nname = \"\\u202Efdp.exe\"\ndate = 2026-01-01\n",
            line: 2, key: "issues[0].name", code: .invalidValue,
            message: "issues[0].name: '\\u{202E}fdp.exe' must not contain NUL, control or bidi characters"
        ),
        MalformedCase(
            name: "path with an empty component",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"a.pdf\"\npath = \"pages//a.pdf\"\n",
            line: 6, key: "issues[0].assets[0].path", code: .invalidValue,
            message: "'pages//a.pdf' has an empty component"
        ),
        MalformedCase(
            name: "path with a component longer than 255 bytes",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"a.pdf\"\npath = \"\(String(repeating: "x", count: 300))\"\n",
            line: 6, key: "issues[0].assets[0].path", code: .invalidValue,
            message: "has a component of 300 bytes; the limit is 255"
        ),
        MalformedCase(
            name: "a file name derived from a URL that climbs",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"https://cdn.example.com/..%2F..%2Fx.pdf\"\n",
            line: 5, key: "issues[0].assets[0].url", code: .invalidValue,
            message: "cannot derive a file name from \"https://cdn.example.com/..%2F..%2Fx.pdf\" (its last component '../../x.pdf' must not contain '..'); set 'path' for this asset"
        ),
        MalformedCase(
            name: "absolute path",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"a.pdf\"\npath = \"/etc/passwd\"\n",
            line: 6, key: "issues[0].assets[0].path", code: .invalidValue,
            message: "paperboy.toml:6: issues[0].assets[0].path: '/etc/passwd' is absolute; it must be relative to the issue folder"
        ),
        MalformedCase(
            name: "unpack other than zip",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"a.tar\"\nunpack = \"tar\"\n",
            line: 6, key: "issues[0].assets[0].unpack", code: .invalidValue,
            message: "expected \"zip\", got \"tar\""
        ),
        MalformedCase(
            name: "bad role",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"a.jpg\"\nrole = \"covr\"\n",
            line: 6, key: "issues[0].assets[0].role", code: .invalidValue, suggestion: "cover",
            message: "expected \"content\" or \"cover\", got \"covr\"; did you mean 'cover'?"
        ),
        MalformedCase(
            name: "bad mode",
            text: "[library]\nmode = \"daemon\"\n",
            line: 2, key: "library.mode", code: .invalidValue,
            message: "library.mode: expected \"foreground\" or \"background\", got \"daemon\""
        ),
        MalformedCase(
            name: "challenge timeout under a second",
            text: "[daemon]\nchallenge_timeout = \"500ms\"\n",
            line: 2, key: "daemon.challenge_timeout", code: .invalidValue,
            message: "challenge_timeout must be at least 1s, got 500ms"
        ),
        MalformedCase(
            name: "bad network class",
            text: "[network]\nallowed = [\n  \"wifi\",\n  \"wfi\",\n]\n",
            line: 4, key: "network.allowed[1]", code: .invalidValue, suggestion: "wifi",
            message: "got \"wfi\"; did you mean 'wifi'?"
        ),
        MalformedCase(
            name: "missing environment variable",
            text: "[[credentials]]\nmatch = \"https://cdn.example.com/\"\nusername = \"reader\"\npassword_env = \"CDN_PASSWORD\"\n",
            line: 4, key: "credentials[0].password_env", code: .missingEnvironmentVariable,
            message: "credentials[0].password_env: environment variable 'CDN_PASSWORD' is not set",
            environment: ["HOME": "/home/reader", "CDN_PASSWORD_OLD": "s3cr3t-old-value", "OTHER": "s3cr3t-other"]
        ),
        MalformedCase(
            name: "missing secret file",
            text: "[[credentials]]\nmatch = \"sftp://files.example.com/\"\npassword_file = \"secrets/cdn.txt\"\n",
            line: 3, key: "credentials[0].password_file", code: .missingSecretFile,
            message: "secret file '/srv/paperboy/secrets/cdn.txt' does not exist or is not readable"
        ),
        MalformedCase(
            name: "inline secret",
            text: "[[credentials]]\nmatch = \"https://cdn.example.com/\"\npassword = \"hunter2\"\n",
            line: 3, key: "credentials[0].password", code: .invalidValue,
            message: "secrets are never written inline; use 'password_env'"
        ),
        MalformedCase(
            name: "two sources for one secret",
            text: "[[credentials]]\nmatch = \"https://cdn.example.com/\"\ntoken_env = \"T\"\ntoken_file = \"t.txt\"\n",
            line: 4, key: "credentials[0].token_file", code: .invalidValue,
            message: "set at most one of 'token_env' and 'token_file'",
            environment: ["HOME": "/home/reader", "T": "x"]
        ),
        MalformedCase(
            name: "credential match without scheme",
            text: "[[credentials]]\nmatch = \"cdn.example.com\"\n",
            line: 2, key: "credentials[0].match", code: .invalidValue,
            message: "expected a URL with a scheme"
        ),
        MalformedCase(
            name: "credential match without a host (file)",
            text: "[[credentials]]\nusername = \"reader\"\nmatch = \"file:///srv/magazines\"\n",
            line: 3, key: "credentials[0].match", code: .invalidValue,
            message: "paperboy.toml:3: credentials[0].match: \"file:///srv/magazines\" names no host"
        ),
        MalformedCase(
            name: "credential match without a host (other scheme)",
            text: "[[credentials]]\nmatch = \"tar:archive\"\n",
            line: 2, key: "credentials[0].match", code: .invalidValue,
            message: "\"tar:archive\" names no host: a match is the URL of an origin"
        ),
        MalformedCase(
            name: "credential match without a host (http)",
            text: "[[credentials]]\nmatch = \"http://\"\n",
            line: 2, key: "credentials[0].match", code: .invalidValue,
            message: "needs a host"
        ),
        MalformedCase(
            name: "credential match with a path servers read differently",
            text: "[[credentials]]\nmatch = \"https://cdn.example.com/premium%2F..%2Fother/\"\n",
            line: 2, key: "credentials[0].match", code: .invalidValue,
            message: "has a path servers read differently: 'premium%2F..%2Fother' has an encoded `/` (%2F)"
        ),
        MalformedCase(
            name: "password in an asset URL",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"https://alice:s3cret-pw@cdn.example.com/a.pdf\"\n",
            line: 5, key: "issues[0].assets[0].url", code: .invalidValue,
            message: "\"https://…@cdn.example.com/a.pdf\" holds a password (user:password@); put it in a [[credentials]] entry"
        ),
        MalformedCase(
            name: "password in a mirror URL",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"https://cdn.example.com/a.pdf\"\nmirrors = [\"https://alice:s3cret-pw@m.example.com/a.pdf\"]\n",
            line: 6, key: "issues[0].assets[0].mirrors", code: .invalidValue,
            message: "\"https://…@m.example.com/a.pdf\" holds a password (user:password@); put it in a [[credentials]] entry"
        ),
        MalformedCase(
            name: "password in a feed URL",
            text: "[[feeds]]\nname = \"weekly\"\nurl = \"https://alice:s3cret-pw@cdn.example.com/catalog.json\"\n",
            line: 3, key: "feeds[0].url", code: .invalidValue,
            message: "holds a password (user:password@)"
        ),
        MalformedCase(
            name: "duplicate credentials written differently",
            text: "[[credentials]]\nmatch = \"https://a/\"\n[[credentials]]\nmatch = \"HTTPS://A:443\"\n",
            line: 4, key: "credentials[1].match", code: .duplicate,
            message: "duplicate credentials for \"HTTPS://A:443\" (first defined on line 1)"
        ),
        MalformedCase(
            name: "duplicate credentials",
            text: "[[credentials]]\nmatch = \"https://a/\"\n[[credentials]]\nmatch = \"https://a/\"\n",
            line: 4, key: "credentials[1].match", code: .duplicate,
            message: "duplicate credentials for \"https://a/\" (first defined on line 1)"
        ),
        MalformedCase(
            name: "duplicate issue",
            text: "[[issues]]\nname = \"weekly\"\ndate = 2026-01-01\n\n[[issues]]\nname = \"weekly\"\ndate = 2026-01-08\n",
            line: 6, key: "issues[1].name", code: .duplicate,
            message: "issues[1].name: duplicate issue name \"weekly\" on lines 1 and 5"
        ),
        MalformedCase(
            name: "two assets saved under one path",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"https://h/x/f.pdf\"\n"
                + "[[issues.assets]]\nurl = \"https://h/y/g.pdf\"\n[[issues.assets]]\nurl = \"https://h/y/f.pdf\"\n",
            line: 9, key: "issues[0].assets[2].url", code: .duplicate,
            message: "two assets of issue \"a\" would both be saved as \"f.pdf\" (lines 4 and 8); set a distinct 'path'"
        ),
        MalformedCase(
            name: "an asset path given twice",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"https://h/1\"\npath = \"d/p\"\n"
                + "[[issues.assets]]\nurl = \"https://h/2\"\npath = \"d/p\"\n",
            line: 9, key: "issues[0].assets[1].path", code: .duplicate,
            message: "two assets of issue \"a\" would both be saved as \"d/p\" (lines 4 and 7)"
        ),
        MalformedCase(
            name: "missing required key",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n\n[[issues]]\nname = \"b\"\n",
            line: 5, key: "issues[1].date", code: .missingKey,
            message: "paperboy.toml:5: missing required key 'date' in [[issues]]"
        ),
        MalformedCase(
            name: "a date-time whose offset puts it in year 10000 in UTC",
            text: "[[issues]]\nname = \"a\"\ndate = 9999-12-31T23:00:00-05:00\n",
            line: 3, key: "issues[0].date", code: .invalidValue,
            message: "paperboy.toml:3: issues[0].date: 10000-01-01T04:00:00Z is outside the dates the library records (years 1 to 9999 in UTC"
        ),
        MalformedCase(
            name: "a date-time whose offset puts it in year 0 in UTC",
            text: "[[issues]]\nname = \"a\"\ndate = 0001-01-01T00:30:00+01:00\n",
            line: 3, key: "issues[0].date", code: .invalidValue,
            message: "paperboy.toml:3: issues[0].date: 0000-12-31T23:30:00Z is outside the dates the library records"
        ),
        MalformedCase(
            name: "a date that is not in the calendar",
            text: "[[issues]]\nname = \"a\"\ndate = \"2026-02-30\"\n",
            line: 3, key: "issues[0].date", code: .invalidValue,
            message: "paperboy.toml:3: issues[0].date: expected a date YYYY-MM-DD, got \"2026-02-30\""
        ),
        MalformedCase(
            name: "missing asset URL",
            text: "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n  [[issues.assets]]\n  role = \"cover\"\n",
            line: 4, key: "issues[0].assets[0].url", code: .missingKey,
            message: "paperboy.toml:4: missing required key 'url' in [[issues.assets]]"
        ),
        MalformedCase(
            name: "missing transport command",
            text: "[[transports]]\nscheme = \"ipfs\"\n",
            line: 1, key: "transports[0].command", code: .missingKey,
            message: "missing required key 'command' in [[transports]]"
        ),
        MalformedCase(
            name: "transport ranges not a boolean",
            text: "[[transports]]\nscheme = \"ipfs\"\ncommand = [\"x\"]\nranges = \"yes\"\n",
            line: 4, key: "transports[0].ranges", code: .typeMismatch,
            message: "paperboy.toml:4: transports[0].ranges: expected a boolean (true or false), got a string"
        ),
        MalformedCase(
            name: "bad date string",
            text: "[[issues]]\nname = \"a\"\ndate = \"21/11/2026\"\n",
            line: 3, key: "issues[0].date", code: .invalidValue,
            message: "expected a date YYYY-MM-DD, got \"21/11/2026\""
        ),
        MalformedCase(
            name: "empty hook",
            text: "[hooks]\non_issue_available = []\n",
            line: 2, key: "hooks.on_issue_available", code: .invalidValue,
            message: "expected a non-empty array of strings"
        ),
        MalformedCase(
            name: "zero no-progress timeout",
            text: "[scheduler]\nno_progress_timeout = \"0s\"\n",
            line: 2, key: "scheduler.no_progress_timeout", code: .invalidValue,
            message: "no_progress_timeout must be longer than 0s, got 0s"
        ),
        MalformedCase(
            name: "zero hook timeout",
            text: "[hooks]\ntimeout = \"0ms\"\n",
            line: 2, key: "hooks.timeout", code: .invalidValue,
            message: "timeout must be longer than 0s, got 0s"
        ),
        MalformedCase(
            name: "retry delays out of order",
            text: "[scheduler]\nretry_base_delay = \"10m\"\nretry_max_delay = \"1m\"\n",
            line: 3, key: "scheduler.retry_max_delay", code: .invalidValue,
            message: "retry_base_delay (10m) is longer than retry_max_delay (1m)"
        ),
    ]

    @Test(arguments: cases)
    func malformedFileIsRejected(_ testCase: MalformedCase) throws {
        let error = try #require(throws: ConfigError.self) {
            try PaperboyConfiguration.parse(testCase.text, fileURL: fixtureFile, environment: testCase.environment)
        }
        #expect(error.file == fixtureFile)
        #expect(error.line == testCase.line)
        #expect(error.key == testCase.key)
        #expect(error.code == testCase.code)
        #expect(error.suggestion == testCase.suggestion)
        #expect(error.description.hasPrefix("/srv/paperboy/paperboy.toml:\(testCase.line):"))
        #expect(error.description.contains(testCase.message), "\(error.description)")
        #expect(!error.description.contains("s3cret-pw"), "\(error.description)")
        for value in testCase.environment.values where value != "/home/reader" {
            #expect(!error.description.contains(value))
        }
    }

    @Test func syntaxErrorsCarryAColumn() throws {
        let error = try #require(throws: ConfigError.self) {
            try PaperboyConfiguration.parse("a = 1\nb = = 2\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        }
        #expect(error.line == 2)
        #expect(error.column != nil)
        #expect(error.description.hasPrefix("/srv/paperboy/paperboy.toml:2:\(error.column ?? 0): "))
    }

    @Test func descriptionIsRelativeInsideTheCurrentDirectory() {
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let error = ConfigError(
            code: .invalidValue, file: cwd.appendingPathComponent("paperboy.toml"), line: 14,
            key: "issues[0].assets[0].sha256", message: "expected 64 hexadecimal digits, got \"abc\""
        )
        #expect(error.description == "paperboy.toml:14: issues[0].assets[0].sha256: expected 64 hexadecimal digits, got \"abc\"")
    }

    @Test func fastCharacterClassesAgreeWithUnicode() async throws {
        let disagreements = try await offThePool {
            (UInt32(0)...0x3100).compactMap { value -> String? in
                guard let scalar = Unicode.Scalar(value) else { return nil }
                let control = PathResolution.isControl(scalar) == (scalar.properties.generalCategory == .control)
                let whitespace = PathResolution.isWhitespace(scalar) == scalar.properties.isWhitespace
                return control && whitespace ? nil : "U+\(String(value, radix: 16))\(control ? "" : " control")\(whitespace ? "" : " whitespace")"
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
    }

    @Test func schemeDetectionOnBytesAgreesWithCharacters() async throws {
        // The Character-based form it replaced (RFC 3986 scheme before the first colon).
        @Sendable func byCharacters(_ text: String) -> Bool {
            guard let colon = text.firstIndex(of: ":") else { return false }
            let scheme = text[..<colon]
            guard let first = scheme.first, first.isASCII, first.isLetter else { return false }
            return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
        }
        let fixed = ["https://h/", "C:\\x", "a:", ":", "", "1a:", "a1+-.:", "a b:", "é:", "ab", "a/b:c", "sftp:", "A.B:"]
        for text in fixed { #expect(PathResolution.hasScheme(text) == byCharacters(text), "\(text.debugDescription)") }
        let disagreements = try await offThePool { () -> [String] in
            let alphabet: [Character] = ["a", "Z", "0", "9", "+", "-", ".", ":", "/", " ", "é", "_"]
            var generator = SystemRandomNumberGenerator()
            return (0..<2000).compactMap { _ in
                let text = String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
                return PathResolution.hasScheme(text) == byCharacters(text) ? nil : text.debugDescription
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements)")
    }

    @Test func aRefusedURLIsShownWithoutItsPassword() throws {
        for text in ["https://reader:s3cret-pw@cdn.example.com/a b.pdf", "https://reader:s3cret-pw@/x"] {
            let error = try #require(throws: ConfigValueError.self) { try PathResolution.parseURL(text) }
            #expect(!error.message.contains("s3cret-pw"), "\(error.message)")
            #expect(error.message.contains("://…@"), "\(error.message)")
        }
        #expect(PathResolution.redacted("https://cdn.example.com/a@b") == "https://…@b")
        #expect(PathResolution.redacted("no scheme@all") == "no scheme@all")
    }

    @Test func urlWithATabOrANonBreakingSpaceIsRefused() {
        for text in ["https://example.com/a\tb", "https://example.com/a\u{00A0}b", "https://example.com/a\u{2028}b"] {
            #expect(throws: ConfigValueError.self) { try PathResolution.parseURL(text) }
        }
    }
}
