import XCTest
final class PlaceholderSuplashAPITests: XCTestCase { func testPlaceholder() {} }
