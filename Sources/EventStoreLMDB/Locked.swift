import Foundation

/// A value guarded by a lock: the small shared-state primitive of this module.
///
/// `@unchecked Sendable` is safe because `state` is only read or written inside `withLock`,
/// which holds `lock` for the whole access.
final class Locked<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) { self.state = state }

    /// Runs `body` with exclusive access to the state.
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
