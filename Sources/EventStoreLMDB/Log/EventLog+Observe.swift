import Foundation

extension EventLog {
    /// The events after `position`, then every event appended later, as they come.
    ///
    /// It first delivers the events already stored after `position`, then waits: appends made
    /// by this process (through this `EventLog`) wake it at once; appends by another process are
    /// noticed by polling ``lastPosition()`` every `pollInterval`, so such an event is delivered
    /// at most one poll interval plus one read after its commit. Reads run in short read
    /// transactions of at most ``readChunkSize`` records.
    ///
    /// The sequence ends with an error if a read fails (for example a damaged record), and stops
    /// cleanly, releasing its task, when the consumer stops iterating or its task is cancelled.
    /// While it runs it keeps this `EventLog` open.
    public func events(
        after position: UInt64, pollInterval: Duration = .milliseconds(100)
    ) -> AsyncThrowingStream<RecordedEvent, Error> {
        AsyncThrowingStream { continuation in
            let wakeup = Wakeup()
            let key = appendSignals.add(wakeup)
            let task = Task { [self] in
                defer { appendSignals.remove(key) }
                var delivered = position
                do {
                    while !Task.isCancelled {
                        if try lastPosition() > delivered {
                            let chunk = try environment.read { txn in
                                try events(from: delivered + 1, direction: .forward, limit: Self.readChunkSize, in: txn)
                            }
                            for event in chunk {
                                continuation.yield(event)
                                delivered = event.position
                            }
                            continue
                        }
                        await wakeup.wait(timeout: pollInterval)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
