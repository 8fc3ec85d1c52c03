import Foundation

/// Where a library keeps its files, all under one root (mode 0700):
///
/// ```
/// ROOT/library.sqlite          the database (WAL), mode 0600
/// ROOT/Issues/NAME/            each issue's content folder
/// ROOT/.partial/ID             bytes of transfers in progress
/// ROOT/.inbox/ID[.ext]         finished files waiting to be delivered
/// ```
struct LibraryLayout: Sendable {
    let root: URL
    let database: URL
    let issuesFolder: URL
    let partialFolder: URL
    let inboxFolder: URL
    /// The folders' paths, to build per-asset URLs without Foundation's path parsing (it showed
    /// in profiles of syncs with thousands of small files).
    private let issuesPath: String
    private let partialPath: String
    private let inboxPath: String

    init(root: URL) {
        self.root = root
        database = root.appendingPathComponent("library.sqlite")
        issuesFolder = root.appendingPathComponent("Issues", isDirectory: true)
        partialFolder = root.appendingPathComponent(".partial", isDirectory: true)
        inboxFolder = root.appendingPathComponent(".inbox", isDirectory: true)
        issuesPath = issuesFolder.path
        partialPath = partialFolder.path
        inboxPath = inboxFolder.path
    }

    func contentURL(issue name: String) -> URL {
        URL(fileURLWithPath: issuesPath + "/" + name, isDirectory: true)
    }

    /// Where an asset delivered to `path` (relative, checked) of issue `name` is.
    func deliveredURL(issue name: String, path: String) -> URL {
        URL(fileURLWithPath: issuesPath + "/" + name + "/" + path, isDirectory: false)
    }

    func partialURL(asset id: String) -> URL {
        URL(fileURLWithPath: partialPath + "/" + id, isDirectory: false)
    }

    /// The inbox file keeps the source's extension, so apps can tell a PDF from a zip.
    func inboxURL(asset id: String, request: AssetRequest) -> URL {
        URL(fileURLWithPath: inboxPath + "/" + Self.inboxName(id: id, source: request.url), isDirectory: false)
    }

    /// `ID.ext` when the source's last path component has a short alphanumeric extension.
    static func inboxName(id: String, source: URL) -> String {
        let path = source.path
        let name = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { path[path.index(after: $0)...] } ?? path[...]
        // As Foundation's `pathExtension` (inbox files of older libraries were named with it): a
        // name of dots up to the last one (".profile", "..pdf") has no extension.
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")),
              name[..<dot].utf8.contains(where: { $0 != UInt8(ascii: ".") }) else { return id }
        let ext = name[name.index(after: dot)...]
        let safe = !ext.isEmpty && ext.utf8.count <= 16 && ext.allSatisfy { $0.isLetter || $0.isNumber }
        return safe ? id + "." + ext : id
    }

    /// Creates the folders that must exist, private to the user.
    func create() throws(LibraryError) {
        for folder in [root, issuesFolder, partialFolder, inboxFolder] {
            try POSIX.makeDirectory(folder)
            chmod(folder.path, 0o700)
        }
    }
}
