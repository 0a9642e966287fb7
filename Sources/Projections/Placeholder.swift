import ReadingEvents
/// Placeholder until the folds land.
enum ProjectionsPlaceholder {}
