import Foundation
import LMDB

/// Wakes the log's observers when this process appends (other processes are seen by polling).
final class AppendSignals: Sendable {
    /// The registered wakeups under their keys, and the last key given. An array, not a
    /// dictionary: every log makes one at its open, and a dictionary's type metadata would cost
    /// the process a protocol conformance lookup (its key's `Hashable`, about 160,000
    /// instructions) there; observers are few.
    private let wakeups = Locked<(last: UInt64, all: [(key: UInt64, wakeup: Wakeup)])>((0, []))

    /// Registers an observer's wakeup; returns its key for ``remove(_:)``.
    func add(_ wakeup: Wakeup) -> UInt64 {
        wakeups.withLock { state in
            state.last += 1
            state.all.append((state.last, wakeup))
            return state.last
        }
    }

    /// Unregisters an observer.
    func remove(_ key: UInt64) {
        wakeups.withLock { $0.all.removeAll { $0.key == key } }
    }

    /// The number of registered observers.
    var count: Int { wakeups.withLock { $0.all.count } }

    /// Wakes every observer (called after an append commits).
    func signalAll() {
        for wakeup in wakeups.withLock({ $0.all.map(\.wakeup) }) { wakeup.signal() }
    }
}

/// A one-waiter wakeup: ``wait(timeout:)`` returns on ``signal()``, on timeout or on cancellation.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// Wakes the waiter, or makes the next wait return at once.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Waits until signalled, `timeout` passes or the task is cancelled.
    func wait(timeout: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.signal()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }
}
