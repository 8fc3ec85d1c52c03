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

    var database: URL { root.appendingPathComponent("library.sqlite") }
    var issuesFolder: URL { root.appendingPathComponent("Issues", isDirectory: true) }
    var partialFolder: URL { root.appendingPathComponent(".partial", isDirectory: true) }
    var inboxFolder: URL { root.appendingPathComponent(".inbox", isDirectory: true) }

    func contentURL(issue name: String) -> URL {
        issuesFolder.appendingPathComponent(name, isDirectory: true)
    }

    func partialURL(asset id: String) -> URL {
        partialFolder.appendingPathComponent(id)
    }

    /// The inbox file keeps the source's extension, so apps can tell a PDF from a zip.
    func inboxURL(asset id: String, request: AssetRequest) -> URL {
        let ext = request.url.pathExtension
        let safe = !ext.isEmpty && ext.count <= 16 && ext.allSatisfy { $0.isLetter || $0.isNumber }
        return inboxFolder.appendingPathComponent(safe ? "\(id).\(ext)" : id)
    }

    /// Creates the folders that must exist, private to the user.
    func create() throws(LibraryError) {
        for folder in [root, issuesFolder, partialFolder, inboxFolder] {
            try POSIX.makeDirectory(folder)
            chmod(folder.path, 0o700)
        }
    }
}
