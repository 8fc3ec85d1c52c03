import Foundation
import Paperboy
import PaperboyWire
import PaperboyFraming

extension DaemonServer {
    /// Refreshes feeds for a `NOTIFY` request and says what it did; throws ``WireError`` or
    /// ``LibraryError`` to answer with an `ERROR`.
    package typealias NotifyHandler = @Sendable (NotifyRequest) async throws -> NotifyReply

    /// Answers `NOTIFY` with `handler` (the feeds live above this module: the command line
    /// knows catalogs). Without one, `NOTIFY` gets `bad-request`.
    package func answerNotifications(with handler: @escaping NotifyHandler) {
        notifyHandler.withLock { $0 = handler }
    }

    /// Starts answering a `NOTIFY`; the `OK` comes when the refresh is done, after requests that
    /// arrive meanwhile (as for `RELOAD`).
    func notify(_ request: NotifyRequest, on connection: DaemonConnection) throws {
        guard let handler = notifyHandler.withLock({ $0 }) else {
            throw WireError(DaemonProtocol.ErrorCode.badRequest, "NOTIFY: this daemon refreshes no feeds")
        }
        Task {
            do {
                var reply = try await handler(request)
                reply.id = request.id
                connection.send(Reply.notify(reply).frame)
            } catch var error as WireError {
                error.id = request.id
                connection.sendError(error)
            } catch let error as LibraryError {
                connection.sendError(WireError(error, id: request.id))
            } catch {
                connection.sendError(WireError(DaemonProtocol.ErrorCode.badRequest, "NOTIFY: \(error)", id: request.id))
            }
        }
    }
}
