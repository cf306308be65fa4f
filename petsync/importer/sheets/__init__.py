"""The spreadsheet readers: one :class:`~petsync.importer.sheets.sheet.Spreadsheet` model,
read from CSV (:mod:`.csv_sheet`) or a workbook (:mod:`.workbook`, measured first by
:mod:`.sheet_range`, exact cells by :mod:`.xlsx_cells`, its values by :mod:`.sheet_values`, in
a child process for .xls and .xlsb by :mod:`.isolated_read`); :func:`.opening.open_spreadsheet`
chooses the reader by the file's suffix, and loads the workbook readers only for a workbook.
:mod:`.cell_problems` names what a workbook reader could not render. :mod:`.excel_safe` is
the rule for the cells of the CSV files petsync writes, which the reader undoes in a file
petsync wrote. The modules import one way: opening -> readers -> sheet, and never the
``importer`` above them.
"""
