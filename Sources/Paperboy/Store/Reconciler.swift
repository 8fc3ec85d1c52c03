import Foundation
import Logging

/// Brings the database in line with the files really on disk when a library opens.
///
/// The rules: a count of bytes is trusted only up to the length of the partial file; a longer
/// file is trusted to its length when it was written in order in this boot (see
/// ``BootIdentity``; it is then made durable and recorded), and otherwise cut back to the durable
/// count by the next attempt; a file in the inbox means the transfer completed and was verified,
/// whatever state the database recorded (idle, paused, failed and cancelled included: the
/// batched updates that followed may be lost with the process); a cancelled asset keeps no
/// partial bytes (a kill came while its transfer stopped); files nobody owns are removed.
/// A file moved straight to its destination (no delegate, see `Scheduler.transfer`) has no inbox
/// commit point: if the crash came before `finished` was recorded, the asset is downloaded again
/// (a file already at the destination may be an older version, so it is not trusted).
/// An unpack's staging folder (`.unpack-ID` in an issue folder) is never a commit point: an
/// unpack killed before its last move is done again from the archive, still in the inbox.
/// If the database cannot be read, nothing is removed: the open fails. Only the rows of files in
/// `.partial/` and `.inbox/`, of finished assets and of assets counting partial bytes are read.
struct Reconciler {
    let store: LibraryStore
    let layout: LibraryLayout
    let logger: Logger
    /// The current boot (``BootIdentity``), `nil` if unknown.
    var bootID: String?
    /// Whether a partial file trusted past its checkpoint is synced before it is recorded.
    var syncsToDisk = true

    /// - Throws: ``LibraryError`` `.storage` when the database cannot be read; nothing is
    ///   removed then.
    func reconcile() throws(LibraryError) {
        // Only the rows of the files found, and those that count on a file: a library of many
        // delivered assets opens in the time its few unfinished ones take.
        store.flush()
        let inboxNames = Self.names(in: layout.inboxFolder)
        let partialNames = Self.names(in: layout.partialFolder)
        let fileIDs = Set(inboxNames.map { String($0.prefix { $0 != "." }) }).union(partialNames)
        var records = try store.assets(ids: Array(fileIDs))
        let found = Set(records.map(\.id))
        records += try store.assetsHoldingFiles().filter { !found.contains($0.id) }
        var owned = Set<String>()
        for record in records where record.state != PersistedState.delivered.rawValue {
            let inbox = layout.inboxURL(asset: record.id, request: record.request)
            let partial = layout.partialURL(asset: record.id)
            owned.insert(inbox.lastPathComponent)
            owned.insert(partial.lastPathComponent)
            var life = AssetLifecycle(record)
            // A finished asset's partial file is not read: it has none that counts.
            let event = AssetLifecycle.Event.reopened(
                inbox: POSIX.exists(inbox) ? fileSize(inbox) : nil,
                partial: life.state == .finished ? nil : partialSize(partial), unpacks: record.request.unpack != nil)
            var actions = life.handle(event)
            while !actions.isEmpty {
                let action = actions.removeFirst()
                switch action {
                case .record(let patch):
                    store.submit(patch)
                case .removePartial:
                    POSIX.remove(partial)
                case .log(let level, let message):
                    logger.log(level: level, "\(message)")
                case .checkDestination:
                    let holdsFile = record.request.destinationPath.map {
                        POSIX.exists(layout.deliveredURL(issue: record.issueName, path: $0))
                    } ?? false
                    actions += life.handle(.destinationChecked(holdsFile: holdsFile))
                case .verifyPartial(let length):
                    if trustsLength(of: partial, length, for: record) { actions += life.handle(.partialVerified(length: length)) }
                default:
                    logger.error("asset \(record.id): nothing to do at open for \(action)")
                }
            }
        }
        store.flush()
        removeOrphans(in: layout.partialFolder, keeping: owned)
        removeOrphans(in: layout.inboxFolder, keeping: owned)
        removeStagingFolders()
    }

    private static func names(in folder: URL) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    }

    /// Whether the `length` bytes of `partial`, more than `record` counts, are all good: written
    /// in order by a process of this boot (the kernel holds every byte `write(2)` accepted), and
    /// no more than the source announced. They are then made durable, so that the count
    /// recorded for them survives a later power loss.
    private func trustsLength(of partial: URL, _ length: Int64, for record: AssetRecord) -> Bool {
        guard let bootID, record.checkpointBoot == bootID, length <= record.expectedBytes ?? .max else { return false }
        guard syncsToDisk else { return true }
        guard let fd = try? POSIX.openReadWrite(partial) else { return false }
        POSIX.dataSync(fd)
        POSIX.closeFile(fd)
        return true
    }

    /// The size of the file at `url`, `nil` if there is none.
    private func partialSize(_ url: URL) -> Int64? {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value
    }

    private func fileSize(_ url: URL) -> Int64 { partialSize(url) ?? 0 }

    /// Removes the staging folders of unpacks a crash interrupted, in every issue folder. Only
    /// real folders named `.unpack-*` directly in a real issue folder are removed; a file or a
    /// link of that name is no staging folder (a destination path may be `.unpack-notes.txt`)
    /// and is left alone, and no link is followed.
    ///
    /// An issue folder whose link count says it holds no folder is not read: most hold only
    /// files, and reading 100 folders of 1,000 files took 35 ms of a 160 ms open.
    private func removeStagingFolders() {
        guard let issues = try? FileManager.default.contentsOfDirectory(atPath: layout.issuesFolder.path) else { return }
        for issue in issues {
            let folder = layout.issuesFolder.appendingPathComponent(issue)
            guard let links = POSIX.realDirectoryLinkCount(folder), !POSIX.holdsNoFolder(folder, links: links),
                  let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { continue }
            for name in names where name.hasPrefix(".unpack-") {
                let staging = folder.appendingPathComponent(name)
                guard POSIX.isRealDirectory(staging) else { continue }
                logger.info("removing the staging folder of an interrupted unpack \(staging.path)")
                try? FileManager.default.removeItem(at: staging)
            }
        }
    }

    private func removeOrphans(in folder: URL, keeping owned: Set<String>) {
        for name in Self.names(in: folder) where !owned.contains(name) {
            logger.info("removing orphaned file \(folder.appendingPathComponent(name).path)")
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
    }
}
