import Foundation

/// Runs `body` on a thread of its own and returns what it returns or throws.
///
/// For blocking or long work (unpacking an archive: seconds of reads, inflating and writes) that
/// would otherwise hold one of the cooperative pool's threads, which are as few as the cores:
/// every other task of the process, and every timer, would wait for it.
package func onAThreadOfItsOwn<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
        Thread {
            do throws(Failure) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }.start()
    }
    return try result.get()
}
