import Testing
@testable import PaperboyConfig

@Suite(.timeLimit(.minutes(1))) struct ConfigSourceMapTests {
    @Test func mapsKeysTablesAndElements() {
        let map = ConfigSourceMap(scanning: """
            title = "x"  # 1
            [scheduler]
            max_concurrent = 4
            text = \"\"\"
            [not.a.table]
            fake = 1
            \"\"\"
            lit = '''
            also = "not a key"'''
            "quoted key" = 2
            dotted.inner = 3

            [[issues]]
            name = "a"
              [[issues.assets]]
              url = "a"
              [[issues.assets]]
              url = "b"
            [[issues]]
            name = "b"
            assets = [
              { url = "c", path = "c.pdf" },
              { url = "d" },
            ]
            """)
        #expect(map.exactLine(for: "title") == 1)
        #expect(map.exactLine(for: "scheduler") == 2)
        #expect(map.exactLine(for: "scheduler.max_concurrent") == 3)
        #expect(map.exactLine(for: "not.a.table") == nil)
        #expect(map.exactLine(for: "scheduler.fake") == nil)
        #expect(map.exactLine(for: "scheduler.also") == nil)
        #expect(map.exactLine(for: "scheduler.quoted key") == 10)
        #expect(map.exactLine(for: "scheduler.dotted.inner") == 11)
        #expect(map.exactLine(for: "issues[0]") == 13)
        #expect(map.exactLine(for: "issues[0].assets[1].url") == 18)
        #expect(map.exactLine(for: "issues[1].name") == 20)
        #expect(map.exactLine(for: "issues[1].assets[0].path") == 22)
        #expect(map.exactLine(for: "issues[1].assets[1]") == 23)
        #expect(map.line(for: "issues[1].assets[1].sha256") == 23)
        #expect(map.line(for: "issues[0].assets[0].sha256") == 15)
        #expect(map.line(for: "nothing.here") == nil)
    }
}

@Suite(.timeLimit(.minutes(1))) struct SchemaPathTests {
    @Test func dropsOnlyNumericIndices() {
        #expect(TableReader.schemaPath("issues[0].assets[12]") == "issues.assets")
        #expect(TableReader.schemaPath("scheduler") == "scheduler")
        #expect(TableReader.schemaPath("issues[0]") == "issues")
        // Not indices: kept as written.
        #expect(TableReader.schemaPath("a[].b[x].c[1") == "a[].b[x].c[1")
        #expect(TableReader.schemaPath("a[[3]]") == "a[]")
        #expect(TableReader.schemaPath("\"k[1]é\"[2]") == "\"ké\"")
    }
}
