/// Why a batch of envelopes made elsewhere (an import) was refused: which envelope, and why.
/// Nothing of the batch is written.
///
/// `Sendable`: a value type of Sendable fields.
public struct RecordedEventRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the envelope was refused.
    ///
    /// `Sendable`: an enum of Sendable values.
    public enum Reason: Sendable, Hashable {
        /// It breaks a rule (see ``EventEnvelope/validate(pageCount:)``).
        case invalid(ValidationError)
        /// Its event ID appears earlier in the batch, at this index, with other content.
        case conflictsWithBatch(index: Int)
        /// Its event ID is already stored, at this position, with other content.
        case conflictsWithStored(position: UInt64)
    }

    /// The index of the refused envelope in the batch, from 0.
    public let index: Int
    /// Its event ID.
    public let eventID: EventID
    /// Why it was refused.
    public let reason: Reason

    /// Creates a rejection.
    public init(index: Int, eventID: EventID, reason: Reason) {
        self.index = index
        self.eventID = eventID
        self.reason = reason
    }

    /// A sentence naming the envelope, the event ID and the rule or conflict.
    public var description: String { "envelope \(index + 1), event \(eventID): \(reasonText)" }

    /// The same rejection for a batch that was a subset of a larger one: `indices[i]` is the
    /// larger batch's index of the subset's envelope `i` (this index and a batch conflict's).
    public func renumbered(_ indices: [Int]) -> RecordedEventRejection {
        let reason: Reason
        switch self.reason {
        case .invalid(let error): reason = .invalid(error)
        case .conflictsWithBatch(let earlier): reason = .conflictsWithBatch(index: indices[earlier])
        case .conflictsWithStored(let position): reason = .conflictsWithStored(position: position)
        }
        return RecordedEventRejection(index: indices[index], eventID: eventID, reason: reason)
    }

    /// The reason as a sentence, without the envelope's index.
    public var reasonText: String {
        switch reason {
        case .invalid(let error): return error.description
        case .conflictsWithBatch(let index):
            return "conflict: the same event ID comes earlier (envelope \(index + 1)) with different content"
        case .conflictsWithStored(let position):
            return "conflict: the same event ID is already stored at position \(position) with different content"
        }
    }
}

/// The check of a batch of envelopes made elsewhere (an import, a host's `appendRecorded`) before
/// any is appended.
///
/// `Sendable`: an uninhabited namespace.
public enum RecordedBatch {
    /// Checks every envelope with ``EventEnvelope/validate(pageCount:goalStart:)`` and finds conflicts.
    ///
    /// - An event ID repeated in the batch, or already stored, must record the same fact
    ///   (``EventEnvelope/recordsSameFact(as:)``); then it is skipped, else it is a conflict.
    /// - Positions and pages are checked against the book's page count as of that envelope: the
    ///   latest `BookAdded`/`MetadataCorrected` of the book earlier in the batch, else the page count
    ///   the store knows (`storedPageCount`), else ``BookMetadata/maxPageCount``.
    /// - A `GoalChanged` target is checked not to be before the start of the goal set earlier in
    ///   the batch (the latest `GoalSet` of the book not followed by `GoalDeleted`/`BookRemoved`).
    ///
    /// - Parameters:
    ///   - stored: the stored envelope with an event ID, if any (none for a batch checked on its own).
    ///   - storedPageCount: the page count the store knows for a reader's book, if any.
    /// - Throws: ``RecordedEventRejection`` for the first refused envelope, or what the closures throw.
    public static func check(_ envelopes: [EventEnvelope],
                             stored: (EventID) throws -> EventEnvelope? = { _ in nil },
                             storedPageCount: (ReaderID, BookID) throws -> Int? = { _, _ in nil }) throws {
        var firstIndex: [EventID: Int] = [:]
        firstIndex.reserveCapacity(envelopes.count)
        var facts = BatchBookFacts()
        for (index, envelope) in envelopes.enumerated() {
            if let earlier = firstIndex[envelope.eventID] {
                guard envelope.recordsSameFact(as: envelopes[earlier]) else {
                    throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .conflictsWithBatch(index: earlier))
                }
                continue
            }
            firstIndex[envelope.eventID] = index
            if let existing = try stored(envelope.eventID) {
                guard envelope.recordsSameFact(as: existing) else {
                    throw RecordedEventRejection(index: index, eventID: envelope.eventID,
                                                 reason: .conflictsWithStored(position: existing.position))
                }
            } else {
                // Once per book and batch: the store's page count decodes the book's view.
                let known = try facts.pageCountAndGoalStart(before: envelope, stored: storedPageCount)
                do { try envelope.validate(pageCount: known.pageCount, goalStart: known.goalStart) } catch {
                    throw RecordedEventRejection(index: index, eventID: envelope.eventID, reason: .invalid(error))
                }
            }
            facts.note(envelope)
        }
    }
}
