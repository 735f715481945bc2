import Foundation

/// Turning a JSON value read from an import or change set into a payload, with the value's
/// position in errors.
enum ImportValue {
    static func payload(
        _ compact: [UInt8], at position: JSONSyntaxError, foundationCheck: Bool = true
    ) throws(JSONSyntaxError) -> Data {
        do throws(PayloadCoding.ValueProblem) {
            return try PayloadCoding.payload(fromCompactJSON: compact, foundationCheck: foundationCheck)
        } catch {
            switch error {
            case .invalidBase64:
                throw JSONSyntaxError(line: position.line, column: position.column,
                                      message: "the \"$base64\" value is not valid base64")
            case .rejectedByFoundation:
                throw JSONSyntaxError(line: position.line, column: position.column,
                                      message: "JSONSerialization refused this value (number out of range?)")
            }
        }
    }
}
