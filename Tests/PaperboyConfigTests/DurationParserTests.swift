import Testing
@testable import PaperboyConfig

@Suite(.timeLimit(.minutes(1))) struct DurationParserTests {
    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)), ("1s", .seconds(1)), ("5m", .seconds(300)), ("24h", .seconds(86_400)),
        ("1h30m", .seconds(5_400)), ("1m30s500ms", .milliseconds(90_500)), ("0s", .zero), ("90s", .seconds(90)),
    ])
    func parsesDurations(_ text: String, _ duration: Duration) throws {
        #expect(try DurationParser.parse(text) == duration)
    }

    @Test(arguments: ["", "5", "m", "5 m", "5min", "1.5s", "-1s", "30m1h", "1m1m", "1h 30m", "5M", "1d"])
    func rejectsMalformedDurations(_ text: String) {
        #expect(throws: ConfigValueError.self) { try DurationParser.parse(text) }
    }

    @Test func formatsDurations() {
        #expect(DurationParser.string(for: .seconds(5_400)) == "1h30m")
        #expect(DurationParser.string(for: .milliseconds(250)) == "250ms")
        #expect(DurationParser.string(for: .zero) == "0s")
        #expect(DurationParser.string(for: .seconds(86_400)) == "24h")
    }

    @Test func formatRoundTrips() throws {
        for text in ["1h30m", "250ms", "5m", "1h1m1s1ms"] {
            #expect(DurationParser.string(for: try DurationParser.parse(text)) == text)
        }
    }
}
