import Foundation
import Paperboy
import TOMLKit

extension ConfigDecoder {
    func decodeIssues(_ tables: [TableReader]) throws(ConfigError) -> [IssueEntry] {
        var issues: [IssueEntry] = []
        // Names and paths seen so far, with their lines: a linear search per entry made a
        // configuration of 1,000 assets compare 500,000 paths.
        var issueLines: [String: Int?] = [:]
        for table in tables {
            try table.checkKnownKeys(ConfigSchema.issues)
            let name = try table.require(table.string("name"), "name")
            if let problem = IssueName.problem(with: name) { throw table.error(.invalidValue, "name", problem) }
            let date = try table.require(issueDate(table), "date")
            let line = context.line(for: table.path)
            if let earlier = issueLines[name] {
                throw table.error(
                    .duplicate, "name",
                    "duplicate issue name \"\(name)\" on lines \(earlier ?? 1) and \(line)"
                )
            }
            issueLines.updateValue(line, forKey: name)
            var assets: [AssetEntry] = []
            var pathLines: [String: Int?] = [:]
            for assetTable in try table.tableArray("assets") {
                let asset = try decodeAsset(assetTable)
                if let earlier = pathLines.updateValue(asset.line, forKey: asset.path) {
                    throw context.error(
                        .duplicate, at: assetTable.keyPath(assetTable.value("path") == nil ? "url" : "path"),
                        "two assets of issue \"\(name)\" would both be saved as \"\(asset.path)\" "
                            + "(lines \(earlier ?? 1) and \(asset.line ?? 1)); set a distinct 'path'"
                    )
                }
                assets.append(asset)
            }
            issues.append(IssueEntry(name: name, date: date, assets: assets, line: line))
            // Decoded: its part of the document is freed now, so the entries grow into the memory
            // the document gives back (the document and all the entries at once were 24 MiB more
            // for 100,000 assets). Nothing reads an issue's table twice.
            table.table.clear()
        }
        return issues
    }

    /// A TOML date (midnight UTC), a `"YYYY-MM-DD"` string, or a date-time (UTC when it has no
    /// offset), in years 1 to 9999 in UTC once its offset is applied (``LibraryDate``).
    private func issueDate(_ table: TableReader) throws(ConfigError) -> Date? {
        guard let value = table.value("date") else { return nil }
        let parsed: Date?
        if let date = value.date {
            parsed = LibraryDate.utc(year: date.year, month: date.month, day: date.day)
        } else if let dateTime = value.dateTime {
            // Typed, because TOMLValueConvertible.time (nil for a date-time) would otherwise win.
            let time: TOMLTime = dateTime.time
            parsed = LibraryDate.utc(year: dateTime.date.year, month: dateTime.date.month, day: dateTime.date.day,
                                     hour: Int(time.hour), minute: Int(time.minute), second: Int(time.second),
                                     nanosecond: Int(time.nanoSecond), offsetSeconds: Int(dateTime.offset?.offset ?? 0) * 60)
        } else if let text = value.string {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                  parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
                  let date = LibraryDate.utc(year: Int(parts[0])!, month: Int(parts[1])!, day: Int(parts[2])!)
            else {
                throw table.error(.invalidValue, "date", "expected a date YYYY-MM-DD, got \"\(text)\"")
            }
            parsed = date
        } else {
            throw table.typeMismatch("date", expected: "a date (2026-11-21 or \"2026-11-21\")", got: value)
        }
        guard let parsed else { throw table.error(.invalidValue, "date", "not a valid calendar date") }
        if let problem = LibraryDate.problem(with: parsed) { throw table.error(.invalidValue, "date", problem) }
        return parsed
    }

    private func decodeAsset(_ table: TableReader) throws(ConfigError) -> AssetEntry {
        try table.checkKnownKeys(ConfigSchema.assets)
        let text = try table.require(table.string("url"), "url")
        let url = try sourceURL(text, in: table)
        var asset = AssetEntry(url: url, path: "", line: context.line(for: table.path))
        if let sha256 = try table.string("sha256") {
            guard sha256.count == 64, sha256.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
                throw table.error(.invalidValue, "sha256", "expected 64 hexadecimal digits, got \"\(sha256)\"")
            }
            asset.sha256 = sha256.lowercased()
        }
        if let path = try table.string("path") {
            if let problem = RelativePath.problem(with: path) { throw table.error(.invalidValue, "path", problem) }
            asset.path = path
        } else {
            let last = url.lastPathComponent
            if let problem = RelativePath.problem(with: last) {
                throw table.error(
                    .invalidValue, "url", "cannot derive a file name from \"\(text)\" (its last component \(problem)); "
                        + "set 'path' for this asset"
                )
            }
            asset.path = last
        }
        asset.unpack = try table.choice("unpack", of: AssetEntry.Unpack.self)
        asset.role = try table.choice("role", of: AssetEntry.Role.self) ?? asset.role
        asset.priority = try table.int("priority") ?? asset.priority
        asset.allowedNetworks = try interfaceClasses(table, "allowed_networks")
        asset.allowExpensive = try table.bool("allow_expensive")
        asset.allowConstrained = try table.bool("allow_constrained")
        asset.options = try table.options("options")
        let indexText = try table.string("index")
        let indexed = try table.bool("indexed")
        if let indexText {
            if indexed == false {
                throw table.error(.invalidValue, "indexed", "is false while 'index' names an index; remove one of them")
            }
            asset.index = try sourceURL(indexText, in: table, key: "index")
        } else if indexed == true {
            asset.index = ChunkIndex.url(besides: url)
        }
        // Read as `url` is: relative paths, the password rule, the same errors.
        for mirror in try table.strings("mirrors") ?? [] {
            asset.mirrors.append(try sourceURL(mirror, in: table, key: "mirrors"))
        }
        return asset
    }
}
