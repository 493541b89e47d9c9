# Generated from MBL.g4 by ANTLR 4.13.2 (scripts/gen-parser); do not edit.
from antlr4 import *
if "." in __name__:
    from .MBLParser import MBLParser
else:
    from MBLParser import MBLParser

# This class defines a complete generic visitor for a parse tree produced by MBLParser.

class MBLVisitor(ParseTreeVisitor):

    # Visit a parse tree produced by MBLParser#program.
    def visitProgram(self, ctx:MBLParser.ProgramContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#item.
    def visitItem(self, ctx:MBLParser.ItemContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#importDecl.
    def visitImportDecl(self, ctx:MBLParser.ImportDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#constDecl.
    def visitConstDecl(self, ctx:MBLParser.ConstDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#enumDecl.
    def visitEnumDecl(self, ctx:MBLParser.EnumDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#enumMember.
    def visitEnumMember(self, ctx:MBLParser.EnumMemberContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#headerDecl.
    def visitHeaderDecl(self, ctx:MBLParser.HeaderDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#structDecl.
    def visitStructDecl(self, ctx:MBLParser.StructDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#fieldDecl.
    def visitFieldDecl(self, ctx:MBLParser.FieldDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#tableDecl.
    def visitTableDecl(self, ctx:MBLParser.TableDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#arrayDecl.
    def visitArrayDecl(self, ctx:MBLParser.ArrayDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#counterDecl.
    def visitCounterDecl(self, ctx:MBLParser.CounterDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#registerDecl.
    def visitRegisterDecl(self, ctx:MBLParser.RegisterDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#placement.
    def visitPlacement(self, ctx:MBLParser.PlacementContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#fnDecl.
    def visitFnDecl(self, ctx:MBLParser.FnDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#blockDecl.
    def visitBlockDecl(self, ctx:MBLParser.BlockDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#params.
    def visitParams(self, ctx:MBLParser.ParamsContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#param.
    def visitParam(self, ctx:MBLParser.ParamContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#pipelineDecl.
    def visitPipelineDecl(self, ctx:MBLParser.PipelineDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#pipePorts.
    def visitPipePorts(self, ctx:MBLParser.PipePortsContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#pipeStage.
    def visitPipeStage(self, ctx:MBLParser.PipeStageContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#pipeConnect.
    def visitPipeConnect(self, ctx:MBLParser.PipeConnectContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#pipeEnd.
    def visitPipeEnd(self, ctx:MBLParser.PipeEndContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#body.
    def visitBody(self, ctx:MBLParser.BodyContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#letElseStmt.
    def visitLetElseStmt(self, ctx:MBLParser.LetElseStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#letStmt.
    def visitLetStmt(self, ctx:MBLParser.LetStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#assignStmt.
    def visitAssignStmt(self, ctx:MBLParser.AssignStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#ifStmt.
    def visitIfStmt(self, ctx:MBLParser.IfStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#forStmt.
    def visitForStmt(self, ctx:MBLParser.ForStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#returnStmt.
    def visitReturnStmt(self, ctx:MBLParser.ReturnStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#forwardStmt.
    def visitForwardStmt(self, ctx:MBLParser.ForwardStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#dropStmt.
    def visitDropStmt(self, ctx:MBLParser.DropStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#exceptionStmt.
    def visitExceptionStmt(self, ctx:MBLParser.ExceptionStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#nextStmt.
    def visitNextStmt(self, ctx:MBLParser.NextStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#adjustStmt.
    def visitAdjustStmt(self, ctx:MBLParser.AdjustStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#blockStmt.
    def visitBlockStmt(self, ctx:MBLParser.BlockStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#exprStmt.
    def visitExprStmt(self, ctx:MBLParser.ExprStmtContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#indexExpr.
    def visitIndexExpr(self, ctx:MBLParser.IndexExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#binExpr.
    def visitBinExpr(self, ctx:MBLParser.BinExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#unaryExpr.
    def visitUnaryExpr(self, ctx:MBLParser.UnaryExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#primaryExpr.
    def visitPrimaryExpr(self, ctx:MBLParser.PrimaryExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#castExpr.
    def visitCastExpr(self, ctx:MBLParser.CastExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#methodExpr.
    def visitMethodExpr(self, ctx:MBLParser.MethodExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#sliceExpr.
    def visitSliceExpr(self, ctx:MBLParser.SliceExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#fieldExpr.
    def visitFieldExpr(self, ctx:MBLParser.FieldExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#intLit.
    def visitIntLit(self, ctx:MBLParser.IntLitContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#boolLit.
    def visitBoolLit(self, ctx:MBLParser.BoolLitContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#packetView.
    def visitPacketView(self, ctx:MBLParser.PacketViewContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#callExpr.
    def visitCallExpr(self, ctx:MBLParser.CallExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#nameExpr.
    def visitNameExpr(self, ctx:MBLParser.NameExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#parenExpr.
    def visitParenExpr(self, ctx:MBLParser.ParenExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#args.
    def visitArgs(self, ctx:MBLParser.ArgsContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#bitType.
    def visitBitType(self, ctx:MBLParser.BitTypeContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#boolType.
    def visitBoolType(self, ctx:MBLParser.BoolTypeContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#namedType.
    def visitNamedType(self, ctx:MBLParser.NamedTypeContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by MBLParser#ident.
    def visitIdent(self, ctx:MBLParser.IdentContext):
        return self.visitChildren(ctx)



del MBLParser