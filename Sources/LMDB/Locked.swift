import Foundation

/// A value guarded by a lock: the small shared-state primitive of this package (the store uses
/// it too, hence `package`).
///
/// `@unchecked Sendable` is safe because `state` is only read or written inside `withLock`,
/// which holds `lock` for the whole access.
package final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    /// A lock around `state`.
    package init(_ state: State) { self.state = state }

    /// Runs `body` with exclusive access to the state.
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
