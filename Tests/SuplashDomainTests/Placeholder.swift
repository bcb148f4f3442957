import XCTest
final class PlaceholderSuplashDomainTests: XCTestCase { func testPlaceholder() {} }
